# What runs a benchmark's machines: the runner image repository, the Cloud Build service
# account (Terraform for the per-run VMs), and one service account per VM role.

resource "google_artifact_registry_repository" "this" {
  project       = var.project_id
  location      = var.region
  repository_id = "${var.prefix}-gatebench"
  format        = "DOCKER"
  description   = "The gatebench runner image (CLI, Terraform, Gatling project, backend server)."
  labels        = var.labels
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

# Builds create and delete instances; they attach the VM service accounts to them.
resource "google_project_iam_member" "build_instances" {
  project = var.project_id
  role    = "roles/compute.instanceAdmin.v1"
  member  = google_service_account.build.member
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

# The build steps, the tester and the backend run the runner image.
resource "google_artifact_registry_repository_iam_member" "readers" {
  for_each = {
    build   = google_service_account.build.member
    tester  = google_service_account.vm["tester"].member
    backend = google_service_account.vm["backend"].member
  }
  project    = var.project_id
  location   = google_artifact_registry_repository.this.location
  repository = google_artifact_registry_repository.this.name
  role       = "roles/artifactregistry.reader"
  member     = each.value
}

resource "google_artifact_registry_repository_iam_member" "publishers" {
  for_each   = toset(var.publishers)
  project    = var.project_id
  location   = google_artifact_registry_repository.this.location
  repository = google_artifact_registry_repository.this.name
  role       = "roles/artifactregistry.writer"
  member     = each.value
}
