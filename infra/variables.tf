variable "allowed_machine_types" {
  description = "Machine types a run may ask for (x-gatebench.infrastructure.gateway_machine, tester_machine, backend_machine): the parse step refuses any other. Empty: every type gatebench prices (E2 and N2 standard, highmem and highcpu; a type it cannot price is refused either way). Required when public_upload is on."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for m in var.allowed_machine_types : can(regex("^(e2|n2)-(standard|highmem|highcpu)-[0-9]+$", m))])
    error_message = "allowed_machine_types: E2 or N2 predefined types (for example n2-standard-2), the ones gatebench prices."
  }
}

variable "api_clients" {
  description = "Secret Manager secret (its id in this project) holding the valid keys of a run's auth.api_key policies, comma-separated (the tester sends the first). Only the gateway and tester VMs' service accounts may read it; no key is ever in a bucket. Empty: the cloud path refuses auth.api_key."
  type        = string
  default     = ""
  validation {
    condition     = var.api_clients == "" || can(regex("^[A-Za-z0-9_-]{1,255}$", var.api_clients))
    error_message = "api_clients: a Secret Manager secret id (letters, digits, _ and -, at most 255), or empty."
  }
}

variable "bigquery_location" {
  description = "Location of the BigQuery dataset. Null (the default): the deployment's region, where the runs bucket is (a BigQuery load job reads the rows file from it: the bucket must be in the dataset's location, or in a region a multi-region dataset contains)."
  type        = string
  default     = null
}

variable "build_region" {
  description = "Region of every Cloud Build build of the deployment: the runner image's, and each run's provision, load and teardown builds (they only call Google's APIs: the VMs stay in `zone`). Cloud Build restricts some projects, new ones included, to us-central1, us-west2, europe-west1, asia-east1, australia-southeast1 and southamerica-east1 (Cloud Build's \"Locations\" page), so the default is one of those; another region works once the project may build there."
  type        = string
  default     = "europe-west1"
  validation {
    condition     = can(regex("^[a-z]+-[a-z]+[0-9]+$", var.build_region))
    error_message = "build_region: a region name such as europe-west1 (us-central1, us-west2, europe-west1, asia-east1, australia-southeast1 and southamerica-east1 work in every project)."
  }
}

variable "build_source_retention_days" {
  description = "The sources staged for the runner image's builds (gs://RUNS_BUCKET/pipeline/source/, a tarball of the checkout per build) are deleted after this many days."
  type        = number
  default     = 7
  validation {
    condition     = var.build_source_retention_days >= 1 && var.build_source_retention_days <= 3650
    error_message = "build_source_retention_days: 1 to 3650."
  }
}

variable "firestore_location" {
  description = "Location of the Firestore database (a region, or a multi-region such as eur3 or nam5). Null (the default): the deployment's region; set it where Firestore does not offer that region."
  type        = string
  default     = null
}

variable "function_bundles_dir" {
  description = "Folder holding the functions' source archives built by `make bundle` (parse.zip, read.zip, render.zip, score.zip, upload.zip)."
  type        = string
  default     = "../build/functions"
}

variable "jwt_signer" {
  description = "Secret Manager secret (its id in this project) holding the PEM private key that tester VMs sign a run's JWTs with (x-gatebench auth.jwt). Only the tester VMs' service account may read it; the key is never in a bucket. Empty: the cloud path refuses auth.jwt."
  type        = string
  default     = ""
  validation {
    condition     = var.jwt_signer == "" || can(regex("^[A-Za-z0-9_-]{1,255}$", var.jwt_signer))
    error_message = "jwt_signer: a Secret Manager secret id (letters, digits, _ and -, at most 255), or empty."
  }
}

variable "labels" {
  description = "Labels added to every resource that takes labels."
  type        = map(string)
  default     = {}
}

variable "limits" {
  description = "Upper bounds of one run, in seconds: each build's timeout, the longest estimated load the parse function accepts, the longest a run's VMs may live (each run's own limit comes from its plan's estimate, never more: vm_lifetime), and how long the score step waits for the gateway VMs' meters to finish their last upload (meter_wait_s); and how many runs may be in progress at once (max_active_runs: the parse step refuses an upload beyond it)."
  type = object({
    provision_s     = optional(number, 1800)
    load_s          = optional(number, 21600)
    teardown_s      = optional(number, 1800)
    vm_lifetime     = optional(number, 43200)
    meter_wait_s    = optional(number, 60)
    max_active_runs = optional(number, 3)
  })
  default = {}
  validation {
    condition     = var.limits.max_active_runs >= 1 && var.limits.max_active_runs <= 100 && floor(var.limits.max_active_runs) == var.limits.max_active_runs
    error_message = "limits.max_active_runs: a whole number from 1 to 100."
  }
  validation {
    condition     = var.limits.meter_wait_s >= 0 && var.limits.meter_wait_s <= 600 && floor(var.limits.meter_wait_s) == var.limits.meter_wait_s
    error_message = "limits.meter_wait_s: whole seconds from 0 to 600 (the score call's timeout is 1800 s)."
  }
  validation {
    # The workflow waits for a build through a connector that gives up after 86,400 s, which
    # also counts the build's time in Cloud Build's queue and the connector's polling (up to
    # 60 s apart): a build allowed as long would be abandoned running (a load still driving
    # VMs the teardown is deleting). Ten minutes are kept for both.
    condition     = alltrue([for s in [var.limits.provision_s, var.limits.load_s, var.limits.teardown_s] : s >= 60 && s <= 85800])
    error_message = "limits: provision_s, load_s and teardown_s are each 60..85800 s (the workflow waits at most one day for a build, its queueing and polling included)."
  }
  validation {
    condition     = var.limits.vm_lifetime > var.limits.provision_s + var.limits.load_s + var.limits.teardown_s
    error_message = "limits.vm_lifetime (VMs delete themselves after it) must exceed provision_s + load_s + teardown_s."
  }
}

variable "max_run_cost_usd" {
  description = "The most one run may cost, by gatebench's estimate before it starts (the figures `gatebench plan` prints: list prices, docs/cloud.md \"Costs\"), in USD: the parse step refuses a run estimated above it. Null: no bound. Required when public_upload is on (billing budgets only alert, up to a day late)."
  type        = number
  default     = null
  validation {
    condition     = var.max_run_cost_usd == null || try(var.max_run_cost_usd > 0, false)
    error_message = "max_run_cost_usd: a positive number of US dollars, or null."
  }
}

variable "outside_access" {
  description = "Give the run VMs a route to the internet (Cloud Router and Cloud NAT, billed per hour while they exist), for plans whose backend is a URL outside Google Cloud. Off: no NAT; Google's APIs and the image repositories are reached through Private Google Access, and the parse step refuses a plan with an outside backend URL."
  type        = bool
  default     = false
}

variable "prefix" {
  description = "Prefix of every resource name (lowercase letters, digits and dashes; starts with a letter; at most 12 characters)."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,10}[a-z0-9]$", var.prefix))
    error_message = "prefix: 2 to 12 characters, lowercase letters, digits and dashes, starting with a letter and not ending with a dash (for example \"gb\" or \"gatebench\")."
  }
}

variable "project_id" {
  description = "The Google Cloud project everything is created in."
  type        = string
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{4,28}[a-z0-9]$", var.project_id))
    error_message = "project_id: a project id (6 to 30 lowercase letters, digits and dashes)."
  }
}

variable "region" {
  description = "Region of the buckets, functions, workflow and the benchmark network (the builds run in build_region)."
  type        = string
  default     = "europe-central2"
}

variable "runner_image_tag" {
  description = "Tag of the gatebench runner image in the project's Artifact Registry (built by the command in the `runner_image_build_command` output); the Cloud Build steps and the tester and backend VMs run it."
  type        = string
  default     = "0.1.0"
  validation {
    condition     = can(regex("^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$", var.runner_image_tag))
    error_message = "runner_image_tag: a Docker tag (letters, digits, _ . -; at most 128 characters)."
  }
}

variable "run_retention_days" {
  description = "Every object of a run in the runs bucket (runs/RUN/...: configurations, markers, rows, samples) is deleted after this many days; results stay in Firestore and BigQuery. Raw logs go earlier (raw_log_retention_days)."
  type        = number
  default     = 365
  validation {
    condition     = var.run_retention_days >= 1 && var.run_retention_days <= 36500
    error_message = "run_retention_days: 1 to 36500."
  }
}

variable "run_state_retention_days" {
  description = "Each run's Terraform state (gs://STATE_BUCKET/runs/RUN/) is deleted this many days after its last write (then kept as an old version for state_versions_days); it must outlive the run's VMs (limits.vm_lifetime). The deployment's own state is kept."
  type        = number
  default     = 30
  validation {
    condition     = var.run_state_retention_days >= 1 && var.run_state_retention_days <= 3650
    error_message = "run_state_retention_days: 1 to 3650."
  }
}

variable "spec_prefix" {
  description = "Objects uploaded under this prefix of the uploads bucket start a run."
  type        = string
  default     = "specs/"
  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9_-]*/$", var.spec_prefix))
    error_message = "spec_prefix: lowercase letters, digits, _ and -, ending with a slash (for example \"specs/\")."
  }
}

variable "protect_results" {
  description = "Keep the results (the Firestore database, the BigQuery dataset and table) through `terraform destroy`. Set false, and apply, before a destroy that should delete them too (docs/cloud.md, \"Remove the deployment\")."
  type        = bool
  default     = true
}

variable "public_read" {
  description = "Let anyone with its URL call the dashboard's read function (allUsers run.invoker), so the site in the runs bucket can list and show runs in a browser: run results become public. Off: only `users`, with an ID token."
  type        = bool
  default     = false
}

variable "public_upload" {
  description = "Let anyone with its URL call the dashboard's upload function (allUsers run.invoker), so the site's upload form works in a browser: anyone may then start runs (VMs, within `limits`). Off: only `users`, with an ID token."
  type        = bool
  default     = false
}

variable "raw_log_retention_days" {
  description = "Raw load-generator logs (raw/RUN/*/simulation.log) are deleted after this many days; results stay in Firestore and BigQuery."
  type        = number
  default     = 30
  validation {
    condition     = var.raw_log_retention_days >= 1 && var.raw_log_retention_days <= 3650
    error_message = "raw_log_retention_days: 1 to 3650."
  }
}

variable "state_versions_days" {
  description = "Earlier versions of a Terraform state (the runs' and, once moved there, this deployment's) are kept this many days in the state bucket."
  type        = number
  default     = 90
  validation {
    condition     = var.state_versions_days >= 1 && var.state_versions_days <= 3650
    error_message = "state_versions_days: 1 to 3650."
  }
}

variable "upload_origins" {
  description = "Origins of the dashboard site (CORS on the uploads bucket and on the read and upload functions): the origin the site in the runs bucket is served from, and http://localhost:PORT for `gatebench serve`."
  type        = list(string)
  default     = ["https://storage.cloud.google.com"]
  validation {
    condition     = alltrue([for o in var.upload_origins : can(regex("^(https://[a-z0-9.-]+|http://(localhost|127\\.0\\.0\\.1)(:[0-9]+)?)$", o))])
    error_message = "upload_origins: https://HOST origins, or http://localhost[:PORT]; never \"*\"."
  }
}

variable "users" {
  description = "Principals (user:, group: or serviceAccount:) who may upload specs, read run artefacts and the dashboard site, call the dashboard's functions and query the results view."
  type        = list(string)
  default     = []
  validation {
    condition     = alltrue([for m in var.users : can(regex("^(user|group|serviceAccount):[^@\\s]+@[^@\\s]+$", m))])
    error_message = "users: \"user:EMAIL\", \"group:EMAIL\" or \"serviceAccount:EMAIL\"; allUsers and allAuthenticatedUsers are refused."
  }
}

variable "vm_image" {
  description = "The Container-Optimized OS image (project cos-cloud) every run's VMs boot, by name: pinned, so that runs are repeatable (a family such as cos-stable moves to a new Docker and kernel without notice) and each run records it. The apply stops when the image does not exist. Newer images: `gcloud compute images list --project cos-cloud --no-standard-images --filter='family~lts'`."
  type        = string
  default     = "cos-133-19999-44-85"
  validation {
    condition     = can(regex("^cos-[0-9]+-[0-9]+-[0-9]+-[0-9]+$", var.vm_image))
    error_message = "vm_image: an image name of cos-cloud such as cos-133-19999-44-85 (cos-MILESTONE-BUILD), not a family."
  }
}

variable "zone" {
  description = "Default zone of the benchmark VMs, in `region` (a spec's x-gatebench.infrastructure.zone overrides it; the parse step refuses one outside `region`)."
  type        = string
  default     = "europe-central2-a"
}
