# Project-level grants that belong to no module.

# Cloud Storage publishes object events to Pub/Sub for Eventarc: its service agent needs
# roles/pubsub.publisher (both triggers, uploads → workflow and runs → ingest, rely on it).
data "google_storage_project_service_account" "gcs" {
  project = var.project_id
}

resource "google_project_iam_member" "gcs_agent_publishes_events" {
  project = var.project_id
  role    = "roles/pubsub.publisher"
  member  = "serviceAccount:${data.google_storage_project_service_account.gcs.email_address}"
}

# One `terraform apply` on an empty project: the Storage triggers (modules/workflow's Eventarc
# trigger, modules/functions' ingest trigger) are created only after the grant above and this
# wait. Enabling the Eventarc API creates its service agent and grants it its role
# asynchronously, and an IAM grant takes effect only after it propagates ("typically within 2
# minutes, can take 7 minutes or longer", IAM "Access change propagation"); a trigger created
# before that fails with a permission error. time_sleep waits on create only: later applies
# do not wait again.
resource "time_sleep" "event_permissions" {
  create_duration = "180s"
  depends_on      = [google_project_service.enabled, google_project_iam_member.gcs_agent_publishes_events]
}
