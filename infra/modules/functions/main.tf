# The Cloud Functions (gen2, Python 3.12): parse, render and score are HTTP functions the
# workflow calls with OIDC; ingest runs on each raw log finalized in the runs bucket (raw/...)
# and stores its measurements as it lands. Each is a thin handler over the
# gatebench core (functions/*/main.py); `make bundle` builds the source archives.

locals {
  functions = {
    parse  = { bundle = "parse", entry = "parse", memory = "512M", timeout = 300, max = 5 }
    render = { bundle = "render", entry = "render", memory = "512M", timeout = 300, max = 5 }
    score  = { bundle = "score", entry = "score", memory = "1Gi", timeout = 1800, max = 5 }
    ingest = { bundle = "score", entry = "ingest", memory = "1Gi", timeout = 540, max = 10 }
  }
  bundles = toset([for f in values(local.functions) : f.bundle])
}

resource "google_service_account" "runtime" {
  project      = var.project_id
  account_id   = "${var.prefix}-functions"
  display_name = "gatebench functions: parse, render, score, ingest"
}

resource "google_service_account" "builder" {
  project      = var.project_id
  account_id   = "${var.prefix}-fn-build"
  display_name = "gatebench functions: builds the functions' containers"
}

# The builder account gets what Google lists for a custom build service account, no project-wide
# builder role: write logs, read the sources (roles/storage.objectViewer on the runs bucket,
# infra/main.tf) and push the functions' images to this repository only (build_config's
# docker_repository, instead of the shared gcf-artifacts repository).
resource "google_project_iam_member" "builder" {
  for_each = toset(["roles/logging.logWriter"])
  project  = var.project_id
  role     = each.value
  member   = google_service_account.builder.member
}

# Cloud Functions copies each function's source archive into a bucket of its own,
# gcf-v2-sources-PROJECT_NUMBER-REGION, and the build fetches it from there: without read
# access there every function build fails ("Access to bucket gcf-v2-sources-... denied. You must
# grant Storage Object Viewer permission to ..."; Cloud Run's "build service account" page lists
# Storage Object Admin for retrieving the source). That bucket exists only after the first
# deploy, so the grant is project-level, limited by a condition to buckets with that name.
resource "google_project_iam_member" "builder_reads_function_sources" {
  project = var.project_id
  role    = "roles/storage.objectViewer"
  member  = google_service_account.builder.member
  condition {
    title       = "${var.prefix}-gcf-v2-sources"
    description = "Only Cloud Functions' source buckets (gcf-v2-sources-PROJECT_NUMBER-REGION)."
    expression  = "resource.name.startsWith(\"projects/_/buckets/gcf-v2-sources-\")"
  }
}

# The builder's grants take effect only once they have propagated ("typically within 2 minutes",
# IAM "Access change propagation"): no function is built before (waits on create only).
resource "time_sleep" "builder_grants" {
  create_duration = "120s"
  depends_on = [
    google_project_iam_member.builder,
    google_project_iam_member.builder_reads_function_sources,
    google_artifact_registry_repository_iam_member.builder_pushes,
  ]
}

resource "google_artifact_registry_repository" "images" {
  project       = var.project_id
  location      = var.region
  repository_id = "${var.prefix}-functions"
  format        = "DOCKER"
  description   = "The gatebench functions' container images (built by Cloud Build)."
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

resource "google_artifact_registry_repository_iam_member" "builder_pushes" {
  project    = var.project_id
  location   = google_artifact_registry_repository.images.location
  repository = google_artifact_registry_repository.images.name
  role       = "roles/artifactregistry.writer"
  member     = google_service_account.builder.member
}

resource "google_storage_bucket_object" "source" {
  for_each = local.bundles
  bucket   = var.runs_bucket
  # The archive's hash in the name redeploys a function when its code changes.
  name   = "pipeline/functions/${each.key}-${filemd5("${var.bundles_dir}/${each.key}.zip")}.zip"
  source = "${var.bundles_dir}/${each.key}.zip"
}

# What ingest reads, and nothing else, fires it. An Eventarc trigger on Cloud Storage's direct
# events filters by bucket only (Eventarc's "Cloud Storage" event filters), and a run writes many
# other objects (its meters' samples every 5 s per gateway, markers, agent messages, the site):
# the bucket notifies a topic of objects finalized under raw/ alone (Pub/Sub notifications for
# Cloud Storage: object_name_prefix), and the topic triggers the function. Cloud Storage's
# service agent publishes with its project-wide grant (infra/iam.tf).
resource "google_pubsub_topic" "raw_logs" {
  project = var.project_id
  name    = "${var.prefix}-raw-logs"
  labels  = var.labels
  # An undelivered notification is worth nothing after a day: the score step ingests every raw
  # log again anyway.
  message_retention_duration = "86400s"
}

resource "google_storage_notification" "raw_logs" {
  bucket             = var.runs_bucket
  topic              = google_pubsub_topic.raw_logs.id
  payload_format     = "JSON_API_V1"
  event_types        = ["OBJECT_FINALIZE"]
  object_name_prefix = "raw/"
}

resource "google_service_account" "ingest_trigger" {
  project      = var.project_id
  account_id   = "${var.prefix}-ingest-trigger"
  display_name = "gatebench: delivers raw-log notifications to the ingest function"
}

resource "google_project_iam_member" "ingest_trigger_receiver" {
  project = var.project_id
  role    = "roles/eventarc.eventReceiver"
  member  = google_service_account.ingest_trigger.member
}

resource "google_cloudfunctions2_function" "this" {
  for_each    = local.functions
  project     = var.project_id
  name        = "${var.prefix}-${each.key}"
  location    = var.region
  description = "gatebench ${each.key}"
  labels      = var.labels

  build_config {
    runtime           = "python312"
    entry_point       = each.value.entry
    service_account   = google_service_account.builder.id
    docker_repository = google_artifact_registry_repository.images.id
    source {
      storage_source {
        bucket = var.runs_bucket
        object = google_storage_bucket_object.source[each.value.bundle].name
      }
    }
  }

  service_config {
    service_account_email          = google_service_account.runtime.email
    available_memory               = each.value.memory
    timeout_seconds                = each.value.timeout
    max_instance_count             = each.value.max
    ingress_settings               = "ALLOW_INTERNAL_ONLY"
    all_traffic_on_latest_revision = true
    environment_variables          = merge(var.env, { GATEBENCH_PROJECT = var.project_id })
  }

  dynamic "event_trigger" {
    for_each = each.key == "ingest" ? [1] : []
    content {
      trigger_region        = var.region
      event_type            = "google.cloud.pubsub.topic.v1.messagePublished"
      pubsub_topic          = google_pubsub_topic.raw_logs.id
      retry_policy          = "RETRY_POLICY_DO_NOT_RETRY"
      service_account_email = google_service_account.ingest_trigger.email
    }
  }

  depends_on = [time_sleep.builder_grants]
}

resource "google_cloud_run_v2_service_iam_member" "ingest_invoker" {
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.this["ingest"].service_config[0].service
  role     = "roles/run.invoker"
  member   = google_service_account.ingest_trigger.member
}
