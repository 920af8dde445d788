# The VMs of one benchmark run: a backend, one VM per gateway (official container image,
# rendered config fetched from the runs bucket), and a tester running the gatling/ project.
# No external addresses; the firewall rules of infra/modules/network (tag-based) open only
# tester → gateway → backend and tester → backend. Every VM deletes itself after
# max_run_duration_s, so a run whose teardown never happens still leaks no VM.

locals {
  labels   = merge(var.labels, { gatebench-run = var.run_id })
  image    = "projects/cos-cloud/global/images/family/cos-stable"
  name     = "${var.prefix}-${var.run_id}"
  registry = split("/", var.runner_image)[0]
}

resource "google_compute_instance" "backend" {
  count        = var.backend == null ? 0 : 1
  name         = "${local.name}-backend"
  machine_type = var.backend.machine_type
  zone         = var.zone
  labels       = merge(local.labels, { role = "backend" })
  tags         = [var.tags.backend]

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

  metadata = {
    startup-script = templatefile("${path.module}/templates/runner.sh.tftpl", {
      registry = local.registry
      image    = var.runner_image
      args     = var.backend.args
    })
  }
}

resource "google_compute_instance" "gateway" {
  for_each     = var.gateways
  name         = "${local.name}-gw-${each.key}"
  machine_type = each.value.machine_type
  zone         = var.zone
  labels       = merge(local.labels, { role = "gateway", gateway = each.key })
  tags         = [var.tags.gateway]

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

  metadata = {
    startup-script = templatefile("${path.module}/templates/gateway.sh.tftpl", {
      bucket   = var.runs_bucket
      files    = [for f in each.value.files : { path = f.path, url_object = urlencode(f.object) }]
      dirs     = each.value.dirs
      mount    = each.value.mount
      image    = each.value.image
      args     = each.value.args
      sidecars = each.value.sidecars
    })
  }

  depends_on = [google_compute_instance.backend]
}

resource "google_compute_instance" "tester" {
  count        = var.tester == null ? 0 : 1
  name         = "${local.name}-tester"
  machine_type = var.tester.machine_type
  zone         = var.zone
  labels       = merge(local.labels, { role = "tester" })
  tags         = [var.tags.tester]

  boot_disk {
    initialize_params {
      image = local.image
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

  metadata = {
    startup-script = templatefile("${path.module}/templates/runner.sh.tftpl", {
      registry = local.registry
      image    = var.runner_image
      args     = var.tester.args
    })
  }

  depends_on = [google_compute_instance.gateway]
}
