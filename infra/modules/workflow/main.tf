# The orchestrator: workflows/benchmark.yaml, its service account, and the Eventarc trigger
# that starts it for every object finalized in the uploads bucket.

resource "google_service_account" "workflow" {
  project      = var.project_id
  account_id   = "${var.prefix}-workflow"
  display_name = "gatebench workflow: runs one benchmark per uploaded spec"
}

resource "google_workflows_workflow" "this" {
  project         = var.project_id
  name            = "${var.prefix}-benchmark"
  region          = var.region
  description     = "gatebench: parse, render, provision, load, score, export, teardown"
  labels          = var.labels
  service_account = google_service_account.workflow.id
  call_log_level  = "LOG_ERRORS_ONLY"
  source_contents = file(var.source_file)
  user_env_vars   = var.env
  # Explicit: the provider's default (true) makes `terraform destroy` of the deployment fail.
  # The workflow holds no data: the next apply recreates it as it was.
  deletion_protection = false

  lifecycle {
    precondition {
      condition     = length(var.env) <= 20 && alltrue([for v in values(var.env) : length(v) <= 4096])
      error_message = "Workflows allows at most 20 user environment variables of at most 4 KiB each; a build config (cloudbuild/*.yaml) may have grown too large."
    }
  }
}

# The workflow calls the parse, render and score functions (OIDC) ...
resource "google_cloud_run_v2_service_iam_member" "invoke" {
  for_each = var.invoke
  project  = var.project_id
  location = var.region
  name     = each.value
  role     = "roles/run.invoker"
  member   = google_service_account.workflow.member
}

# ... starts builds that run as the build service account ...
resource "google_project_iam_member" "builds" {
  project = var.project_id
  role    = "roles/cloudbuild.builds.editor"
  member  = google_service_account.workflow.member
}

resource "google_service_account_iam_member" "act_as_build" {
  service_account_id = var.build_account.name
  role               = "roles/iam.serviceAccountUser"
  member             = google_service_account.workflow.member
}

# ... and writes its call logs.
resource "google_project_iam_member" "logs" {
  project = var.project_id
  role    = "roles/logging.logWriter"
  member  = google_service_account.workflow.member
}

resource "google_service_account" "trigger" {
  project      = var.project_id
  account_id   = "${var.prefix}-upload-trigger"
  display_name = "gatebench: delivers upload events to the workflow"
}

resource "google_project_iam_member" "trigger" {
  for_each = toset(["roles/eventarc.eventReceiver", "roles/workflows.invoker"])
  project  = var.project_id
  role     = each.value
  member   = google_service_account.trigger.member
}

resource "google_eventarc_trigger" "uploads" {
  project         = var.project_id
  name            = "${var.prefix}-uploads"
  location        = var.region
  labels          = var.labels
  service_account = google_service_account.trigger.email

  matching_criteria {
    attribute = "type"
    value     = "google.cloud.storage.object.v1.finalized"
  }
  matching_criteria {
    attribute = "bucket"
    value     = var.uploads_bucket
  }

  destination {
    workflow = google_workflows_workflow.this.id
  }

  depends_on = [google_project_iam_member.trigger]
}
