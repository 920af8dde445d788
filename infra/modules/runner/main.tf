# What runs a benchmark's machines: the runner image repository, the Docker Hub remote
# repository the gateway VMs pull through, the Cloud Build service account (Terraform for the
# per-run VMs, and the runner image's own build), and one service account per VM role.

resource "google_artifact_registry_repository" "this" {
  project       = var.project_id
  location      = var.region
  repository_id = "${var.prefix}-gatebench"
  format        = "DOCKER"
  description   = "The gatebench runner image (CLI, Terraform, Gatling project, backend server)."
  labels        = var.labels

  # Old images go on their own (Artifact Registry cleanup policies, run daily): versions no tag
  # points at any more after ${var.untagged_image_days} days, always keeping the 5 newest.
  cleanup_policy_dry_run = false
  cleanup_policies {
    id     = "delete-untagged"
    action = "DELETE"
    condition {
      tag_state  = "UNTAGGED"
      older_than = "${var.untagged_image_days * 86400}s"
    }
  }
  cleanup_policies {
    id     = "keep-newest"
    action = "KEEP"
    most_recent_versions {
      keep_count = 5
    }
  }
}

# Gateway images are Docker Hub images (nginx, kong, tyk ...). The VMs have no external
# address and share one NAT address, so pulling from docker.io directly meets Docker Hub's
# anonymous pull limit; this remote repository pulls each image once and caches it.
# infra/vms rewrites every gateway image to REGION-docker.pkg.dev/PROJECT/PREFIX-dockerhub/...
resource "google_artifact_registry_repository" "dockerhub" {
  project       = var.project_id
  location      = var.region
  repository_id = "${var.prefix}-dockerhub"
  format        = "DOCKER"
  mode          = "REMOTE_REPOSITORY"
  description   = "Docker Hub, cached: the gateways' official images."
  labels        = var.labels

  remote_repository_config {
    description = "Docker Hub"
    docker_repository {
      public_repository = "DOCKER_HUB"
    }
  }

  # The cache: an image no run has pulled for 30 days is dropped (pulled again when needed).
  cleanup_policy_dry_run = false
  cleanup_policies {
    id     = "drop-old-cache"
    action = "DELETE"
    condition {
      tag_state  = "ANY"
      older_than = "2592000s"
    }
  }
}

resource "google_service_account" "build" {
  project      = var.project_id
  account_id   = "${var.prefix}-build"
  display_name = "gatebench Cloud Build: creates and destroys the VMs of one run"
}

resource "google_service_account" "vm" {
  for_each     = toset(["tester", "gateway", "backend"])
  project      = var.project_id
  account_id   = "${var.prefix}-${each.key}"
  display_name = "gatebench ${each.key} VM"
}

# Builds create and delete the run's instances; they attach the VM service accounts to them.
# A role of exactly what the builds' Terraform does (infra/vms: google_compute_instance with a
# boot disk, metadata, tags, labels and a service account, in the benchmark subnet; read back
# and deleted with its disk), the permissions each call needs as Google's "Create and start a
# Compute Engine instance" and "Delete a Compute Engine instance" pages list them. A predefined
# role would bring more (Compute Instance Admin (v1) also covers instance templates, instance
# groups, images and snapshots: the IAM roles reference for Compute Engine). The condition
# keeps instances and disks to those named like a run's VMs (PREFIX-r-..., infra/vms; a boot
# disk takes its instance's name) and leaves the subnetwork and the zone operations usable.
resource "google_project_iam_custom_role" "run_vms" {
  project     = var.project_id
  role_id     = "${replace(var.prefix, "-", "_")}_run_vms"
  title       = "gatebench ${var.prefix}: a run's VMs"
  description = "Create, read and delete one run's instances and their boot disks (gatebench's provision and teardown builds)."
  permissions = [
    "compute.disks.create",
    "compute.disks.delete",
    "compute.disks.get",
    "compute.instances.create",
    "compute.instances.delete",
    "compute.instances.get",
    "compute.instances.setLabels",
    "compute.instances.setMetadata",
    "compute.instances.setServiceAccount",
    "compute.instances.setTags",
    "compute.subnetworks.use",
    "compute.zoneOperations.get",
  ]
}

resource "google_project_iam_member" "build_instances" {
  project = var.project_id
  role    = google_project_iam_custom_role.run_vms.id
  member  = google_service_account.build.member
  condition {
    title       = "${var.prefix}-run-vms-only"
    description = "Only the per-run instances and disks (names start with ${var.prefix}-r-)."
    expression  = local.run_vms_only
  }
}

locals {
  run_vm_prefix = "${var.prefix}-r-"
  run_vms_only = join(" || ", [
    "(resource.type != \"compute.googleapis.com/Instance\" && resource.type != \"compute.googleapis.com/Disk\")",
    "(resource.type == \"compute.googleapis.com/Instance\" && resource.name.extract(\"/instances/{name}\").startsWith(\"${local.run_vm_prefix}\"))",
    "(resource.type == \"compute.googleapis.com/Disk\" && resource.name.extract(\"/disks/{name}\").startsWith(\"${local.run_vm_prefix}\"))",
  ])
}

# The provision build signs each VM's write policies as itself (IAM signBlob: no key exists);
# a VM writes only its own run's objects with them (gatebench.cloud._writes).
resource "google_service_account_iam_member" "build_signs_as_itself" {
  service_account_id = google_service_account.build.name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = google_service_account.build.member
}

resource "google_service_account_iam_member" "build_acts_as_vms" {
  for_each           = google_service_account.vm
  service_account_id = each.value.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.build.member
}

# Builds and every VM write their logs (CLOUD_LOGGING_ONLY builds need it).
resource "google_project_iam_member" "log_writers" {
  for_each = merge({ build = google_service_account.build }, google_service_account.vm)
  project  = var.project_id
  role     = "roles/logging.logWriter"
  member   = each.value.member
}

# The build steps, the tester, the backend and each gateway VM's meter run the runner image;
# the gateways pull their own images through the Docker Hub remote repository.
resource "google_artifact_registry_repository_iam_member" "readers" {
  for_each = {
    build   = google_service_account.build.member
    tester  = google_service_account.vm["tester"].member
    backend = google_service_account.vm["backend"].member
    gateway = google_service_account.vm["gateway"].member
  }
  project    = var.project_id
  location   = google_artifact_registry_repository.this.location
  repository = google_artifact_registry_repository.this.name
  role       = "roles/artifactregistry.reader"
  member     = each.value
}

# Gateway VMs pull their images through it; the provision build reads the digest each tag
# names (gatebench cloud vm-vars pins every image of a run by digest).
resource "google_artifact_registry_repository_iam_member" "gateways_pull_docker_hub" {
  for_each = {
    gateway = google_service_account.vm["gateway"].member
    build   = google_service_account.build.member
  }
  project    = var.project_id
  location   = google_artifact_registry_repository.dockerhub.location
  repository = google_artifact_registry_repository.dockerhub.name
  role       = "roles/artifactregistry.reader"
  member     = each.value
}

# cloudbuild/runner-image.yaml runs as the build account (serviceAccount:), so the image is
# pushed by that account, not by whoever submits the build: it may write this repository only.
resource "google_artifact_registry_repository_iam_member" "build_pushes_runner" {
  project    = var.project_id
  location   = google_artifact_registry_repository.this.location
  repository = google_artifact_registry_repository.this.name
  role       = "roles/artifactregistry.writer"
  member     = google_service_account.build.member
}
