# The VMs of one benchmark run: a backend, one VM per gateway (official container image,
# rendered config fetched from the runs bucket), and the testers (`tester.count`, one or
# more) running the gatling/ project.
# No external addresses; the firewall rules of infra/modules/network (tag-based) open only
# tester → gateway → backend and tester → backend. Every VM deletes itself after
# max_run_duration_s, so a run whose teardown never happens still leaks no VM.

locals {
  labels   = merge(var.labels, { gatebench-run = var.run_id })
  image    = var.image
  name     = "${var.prefix}-${var.run_id}"
  registry = split("/", var.runner_image)[0]
  # The Docker Hub remote repository of infra/modules/runner: same registry host and project
  # as the runner image, named PREFIX-dockerhub.
  docker_hub = "${local.registry}/${var.project}/${var.prefix}-dockerhub"
  # Tester 0 is PREFIX-RUN-tester (the single tester's name, gatebench.cloud._layout); tester
  # T > 0 is PREFIX-RUN-tester-T.
  tester_suffix = [for i in range(16) : i == 0 ? "" : "-${i}"]
}

module "images" {
  source = "./modules/images"
  images = distinct(flatten([for g in values(var.gateways) : concat([g.image], [for s in g.sidecars : s.image])]))
  mirror = local.docker_hub
}

resource "google_compute_instance" "backend" {
  count        = var.backend == null ? 0 : 1
  name         = "${local.name}-backend"
  machine_type = var.backend.machine_type
  zone         = var.zone
  labels       = merge(local.labels, { role = "backend" })
  # teardown deletes every VM of a run
  deletion_protection = false
  tags                = [var.tags.backend]

  boot_disk {
    initialize_params {
      image = local.image
    }
  }

  network_interface {
    subnetwork = var.subnetwork
  }

  service_account {
    email  = var.service_accounts.backend
    scopes = ["cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot = true
  }

  scheduling {
    provisioning_model          = "STANDARD"
    instance_termination_action = "DELETE"
    max_run_duration {
      seconds = var.max_run_duration_s
    }
  }

  metadata = merge(lookup(var.vm_metadata, "backend", {}), {
    # Container-Optimized OS's logging agent: the startup script's output and the system's
    # journal to Cloud Logging (the containers log there themselves: --log-driver=gcplogs).
    google-logging-enabled = "true"
    startup-script = templatefile("${path.module}/templates/runner.sh.tftpl", {
      registry = local.registry
      image    = var.runner_image
      args     = var.backend.args
      ports    = var.backend.ports
      caps     = var.backend.caps
    })
  })
}

resource "google_compute_instance" "gateway" {
  for_each     = var.gateways
  name         = "${local.name}-gw-${each.key}"
  machine_type = each.value.machine_type
  zone         = var.zone
  labels       = merge(local.labels, { role = "gateway", gateway = each.key })
  # teardown deletes every VM of a run
  deletion_protection = false
  tags                = [var.tags.gateway]

  boot_disk {
    initialize_params {
      image = local.image
    }
  }

  network_interface {
    subnetwork = var.subnetwork
  }

  service_account {
    email  = var.service_accounts.gateway
    scopes = ["cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot = true
  }

  scheduling {
    provisioning_model          = "STANDARD"
    instance_termination_action = "DELETE"
    max_run_duration {
      seconds = var.max_run_duration_s
    }
  }

  metadata = merge(lookup(var.vm_metadata, "gw-${each.key}", {}), {
    # Container-Optimized OS's logging agent: the startup script's output and the system's
    # journal to Cloud Logging (the containers log there themselves: --log-driver=gcplogs).
    google-logging-enabled = "true"
    startup-script = templatefile("${path.module}/templates/gateway.sh.tftpl", {
      bucket   = var.runs_bucket
      files    = [for f in each.value.files : { path = f.path, url_object = urlencode(f.object) }]
      dirs     = each.value.dirs
      mount    = each.value.mount
      registry = local.registry
      image    = module.images.pull[each.value.image]
      args     = each.value.args
      # What the gateway always runs with (USAGE_DISABLE, GOMAXPROCS): plain NAME=VALUE pairs.
      env = [for k in sort(keys(each.value.env)) : "${k}=${each.value.env[k]}"]
      # Names whose values the VM generates at boot, for the gateway container alone.
      random_env = each.value.random_env
      # `cloud gateway-config ...` (runner image): the API keys, before the gateway starts.
      configure = each.value.configure
      sidecars  = [for s in each.value.sidecars : merge(s, { image = module.images.pull[s.image] })]
      # `cloud live-gateway ...` (runner image): a scale or change-under-load run's live agent.
      live  = each.value.live
      ports = [each.value.port]
      # The meter beside the gateway (runner image): its run and the target it reports.
      runner_image = var.runner_image
      run_id       = var.run_id
      target       = each.key
    })
  })

  depends_on = [google_compute_instance.backend]
}

# Tester 0 keeps the single tester's name; every tester runs its share of every phase
# (gatebench.core.testers), they start together (cloud/_tester.py: load-request.json start_at) and
# meet before every phase at tester 0's phase barrier: only tester 0 opens its port
# (`listen`; the network's tester → tester rule lets the others reach it).
resource "google_compute_instance" "tester" {
  count        = var.tester == null ? 0 : var.tester.count
  name         = "${local.name}-tester${local.tester_suffix[count.index]}"
  machine_type = var.tester.machine_type
  zone         = var.zone
  labels       = merge(local.labels, { role = "tester", tester = tostring(count.index) })
  # teardown deletes every VM of a run
  deletion_protection = false
  tags                = [var.tags.tester]

  boot_disk {
    initialize_params {
      image = local.image
      size  = var.tester.disk_gb
    }
  }

  network_interface {
    subnetwork = var.subnetwork
  }

  service_account {
    email  = var.service_accounts.tester
    scopes = ["cloud-platform"]
  }

  shielded_instance_config {
    enable_secure_boot = true
  }

  scheduling {
    provisioning_model          = "STANDARD"
    instance_termination_action = "DELETE"
    max_run_duration {
      seconds = var.max_run_duration_s
    }
  }

  metadata = merge(lookup(var.vm_metadata, "tester${local.tester_suffix[count.index]}", {}), {
    # Container-Optimized OS's logging agent: the startup script's output and the system's
    # journal to Cloud Logging (the containers log there themselves: --log-driver=gcplogs).
    google-logging-enabled = "true"
    startup-script = templatefile("${path.module}/templates/runner.sh.tftpl", {
      registry = local.registry
      image    = var.runner_image
      args     = var.tester.count == 1 ? var.tester.args : concat(var.tester.args, ["--tester", tostring(count.index), "--testers", tostring(var.tester.count)])
      ports    = count.index == 0 ? var.tester.listen : []
      caps     = var.tester.caps
    })
  })

  depends_on = [google_compute_instance.gateway]
}
