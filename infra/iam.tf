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
