# Written per run by `gatebench cloud vm-vars` (run.tfvars.json); see gatebench/cloud/_vms.py.

variable "backend" {
  description = "The backend VM: the runner image's `cloud backend ...` (null when the spec benchmarks an existing service by URL), the port of its first replica, every port it listens on (the replicas', a change-under-load run's second echo backend, the baseline's TLS listener, the fault's control) and the capabilities its container gets beyond Docker's (NET_RAW: a fault's connection attempts counted from the packets)."
  type = object({
    machine_type = string
    port         = number
    ports        = list(number)
    args         = list(string)
    caps         = optional(list(string), [])
  })
  default = null
  validation {
    condition     = var.backend == null || try(alltrue([for c in var.backend.caps : contains(["NET_RAW"], c)]), false)
    error_message = "backend.caps: capabilities from NET_RAW only."
  }
  validation {
    condition     = var.backend == null || try(contains(var.backend.ports, var.backend.port) && alltrue([for p in var.backend.ports : p >= 1024 && p <= 65535 && floor(p) == p]), false)
    error_message = "backend.ports: whole TCP ports from 1024 to 65535, the first replica's port among them."
  }
}

variable "gateways" {
  description = "One VM per gateway: its official image pinned by version, the rendered files fetched from the runs bucket into `mount` (with the folders the gateway expects beside them), the container's arguments, the environment variables it always runs with (`env`: KrakenD's USAGE_DISABLE, GOMAXPROCS = the VM's vCPUs), the environment variables the VM fills with a random value at boot (Tyk's control-API secret), the runner image's commands that complete the configuration before the gateway starts (`cloud gateway-config`: the API keys), helper containers (Tyk's Redis), and the runner image's live agent beside it in a scale or change-under-load run (`live`: `cloud live-gateway ...`, with the VM's Docker socket)."
  type = map(object({
    machine_type = string
    image        = string
    port         = number
    mount        = string
    files = list(object({
      object = string
      path   = string
    }))
    dirs       = list(string)
    args       = list(string)
    env        = optional(map(string), {})
    random_env = list(string)
    configure  = list(list(string))
    sidecars = list(object({
      name  = string
      image = string
      args  = list(string)
    }))
    live = optional(list(list(string)), [])
  }))
  default = {}
  validation {
    condition     = alltrue([for g in values(var.gateways) : can(regex("^[a-z0-9][a-z0-9./_-]*(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$", g.image)) && length(regexall(":", g.image)) >= 1])
    error_message = "gateways[*].image: an image pinned by tag or digest (for example nginx:1.27.3)."
  }
  validation {
    condition     = alltrue(flatten([for g in values(var.gateways) : [for a in concat(g.args, flatten(g.configure), flatten(g.live), g.dirs, [g.mount], [for f in g.files : f.path]) : !can(regex("['\\n\\r]", a))]]))
    error_message = "gateways: arguments and paths may not contain quotes or newlines (they are quoted into the VM's startup script)."
  }
  validation {
    condition     = alltrue(flatten([for g in values(var.gateways) : [for k, v in g.env : can(regex("^[A-Z][A-Z0-9_]{0,63}$", k)) && can(regex("^[A-Za-z0-9_.,:/=+-]{0,256}$", v))]]))
    error_message = "gateways[*].env: environment variable names (upper-case letters, digits and _, starting with a letter) and plain values (letters, digits and _.,:/=+-: they are quoted into the VM's startup script)."
  }
  validation {
    condition     = alltrue(flatten([for g in values(var.gateways) : [for e in g.random_env : can(regex("^[A-Z][A-Z0-9_]{0,63}$", e))]]))
    error_message = "gateways[*].random_env: environment variable names (upper-case letters, digits and _, starting with a letter); the VM generates their values."
  }
  validation {
    condition     = alltrue([for name in keys(var.gateways) : can(regex("^[a-z][a-z0-9-]{0,30}$", name))])
    error_message = "gateways: names are lowercase letters, digits and hyphens, starting with a letter (a VM name and the meter's --target in the startup script)."
  }
}

variable "image" {
  description = "The Container-Optimized OS image every VM of the run boots, by name, never a family: the deployment's vm_image, so a run can be repeated on the same system (its Docker, kernel and cgroup layout) and records it."
  type        = string
  validation {
    condition     = can(regex("^projects/cos-cloud/global/images/cos-[a-z0-9-]+$", var.image))
    error_message = "image: a Container-Optimized OS image of the cos-cloud project by name (projects/cos-cloud/global/images/cos-...), not a family."
  }
}

variable "labels" {
  description = "Labels of every VM (gatebench-run is added)."
  type        = map(string)
  default     = {}
}

variable "max_run_duration_s" {
  description = "Every VM deletes itself after this many seconds, even if teardown never ran: the plan's estimate plus a margin, capped by the deployment's limits.vm_lifetime (gatebench.cloud._vms)."
  type        = number
  validation {
    condition     = var.max_run_duration_s >= 60 && floor(var.max_run_duration_s) == var.max_run_duration_s
    error_message = "max_run_duration_s: whole seconds, at least 60."
  }
}

variable "prefix" {
  description = "Prefix of the deployment (VM names start with it)."
  type        = string
}

variable "project" {
  description = "Project of the VMs."
  type        = string
}

variable "run_id" {
  description = "The run these VMs serve (gatebench.core.model.run_id_for_object)."
  type        = string
  validation {
    condition     = can(regex("^r-[0-9a-f]{20}$", var.run_id))
    error_message = "run_id: r- and 20 hexadecimal digits."
  }
}

variable "runner_image" {
  description = "The gatebench runner image (tester, backend and each gateway VM's meter)."
  type        = string
  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9.-]*/[a-z0-9][a-z0-9._/-]*(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$", var.runner_image))
    error_message = "runner_image: an image reference REGISTRY/PATH[:TAG][@sha256:DIGEST] (it is quoted into the VMs' startup scripts)."
  }
}

variable "runs_bucket" {
  description = "Bucket holding the rendered configs, receiving raw logs and the gateways' cgroup samples."
  type        = string
  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$", var.runs_bucket))
    error_message = "runs_bucket: a bucket name (3 to 63 lowercase letters, digits, dots, hyphens and underscores)."
  }
}

variable "service_accounts" {
  description = "Emails of the tester, gateway and backend service accounts."
  type = object({
    tester  = string
    gateway = string
    backend = string
  })
}

variable "subnetwork" {
  description = "Self link of the benchmark subnet."
  type        = string
}

variable "tags" {
  description = "Network tags that the firewall rules of infra/modules/network match."
  type = object({
    tester  = string
    gateway = string
    backend = string
  })
}

variable "tester" {
  description = "The tester VMs: machine type, boot disk size (disk_gb: the plan's raw log bound, twice, over the system; gatebench.core.cost.tester_disk_gib), the runner image's arguments (`cloud tester ...`), how many share every phase (count, 1-16; tester T gets `--tester T --testers count`), the ports tester 0 listens on (listen: its phase barrier, with several testers) and the capabilities their containers get beyond Docker's (NET_RAW: a TLS plan's handshakes counted from the packets). Null: no tester (an empty fleet, for teardown)."
  type = object({
    machine_type = string
    disk_gb      = optional(number, 10)
    args         = list(string)
    count        = optional(number, 1)
    listen       = optional(list(number), [])
    caps         = optional(list(string), [])
  })
  default = null
  validation {
    condition     = var.tester == null || try(var.tester.count >= 1 && var.tester.count <= 16 && floor(var.tester.count) == var.tester.count, false)
    error_message = "tester.count must be a whole number from 1 to 16."
  }
  validation {
    condition     = var.tester == null || try(alltrue([for c in var.tester.caps : contains(["NET_RAW"], c)]), false)
    error_message = "tester.caps: capabilities from NET_RAW only."
  }
  validation {
    condition     = var.tester == null || try(var.tester.disk_gb >= 10 && var.tester.disk_gb <= 65536 && floor(var.tester.disk_gb) == var.tester.disk_gb, false)
    error_message = "tester.disk_gb must be whole GiB from 10 (Container-Optimized OS's minimum) to 65536."
  }
}

variable "vm_metadata" {
  description = "Each VM's own instance metadata beyond its startup script, by machine (backend, gw-NAME, tester, tester-T): its run's write policies (gatebench-writes: a VM writes only its own run's objects, gatebench.cloud._writes), made by the provision build. Sensitive: never in a plan's output or a build's log; only the run's state holds it."
  type        = map(map(string))
  default     = {}
  sensitive   = true
}

variable "zone" {
  description = "Zone of the VMs."
  type        = string
}
