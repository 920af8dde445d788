# The dashboard's two HTTP functions (gen2, Python 3.12), thin handlers over gatebench.web:
# `read` answers the read API from Firestore, `upload` checks a spec and answers a signed URL
# for one PUT of it into the uploads bucket (functions/read, functions/upload).
#
# Browsers call them directly, so ingress is ALLOW_ALL and IAM decides who may call:
# run.invoker for var.users (an ID token: `gcloud auth print-identity-token`), and allUsers
# only on the functions opted in with var.public_read / var.public_upload. A browser's CORS
# preflight carries no credentials, so a page on another origin reaches only a public
# function (infra/README.md, "The dashboard").

locals {
  functions = {
    read = {
      description = "gatebench dashboard: the read API over Firestore"
      env = {
        GATEBENCH_FIRESTORE_DATABASE = var.firestore_database
      }
      public = var.public_read
    }
    upload = {
      description = "gatebench dashboard: checks a spec, signs its upload into the uploads bucket"
      env = {
        GATEBENCH_UPLOADS_BUCKET = var.uploads_bucket
        GATEBENCH_SPEC_PREFIX    = var.spec_prefix
      }
      public = var.public_upload
    }
  }
  invokers = merge(
    {
      for pair in setproduct(keys(local.functions), var.users) :
      "${pair[0]} ${pair[1]}" => { function = pair[0], member = pair[1] }
    },
    # The only public grant of the deployment, each behind its own opt-in variable.
    { for name, f in local.functions : "${name} allUsers" => { function = name, member = "allUsers" } if f.public },
  )
}

resource "google_service_account" "this" {
  for_each     = local.functions
  project      = var.project_id
  account_id   = "${var.prefix}-dash-${each.key}"
  display_name = "gatebench dashboard: the ${each.key} function"
}

# upload: signs URLs without a key (IAM signBlob as itself), and a signed PUT acts with its
# rights, so it may create objects in the uploads bucket and nothing else.
resource "google_service_account_iam_member" "upload_signs_as_itself" {
  service_account_id = google_service_account.this["upload"].name
  role               = "roles/iam.serviceAccountTokenCreator"
  member             = google_service_account.this["upload"].member
}

resource "google_storage_bucket_iam_member" "upload_creates_specs" {
  bucket = var.uploads_bucket
  role   = "roles/storage.objectCreator"
  member = google_service_account.this["upload"].member
}

# read: reads documents of the results database only (an IAM condition on its name).
resource "google_project_iam_member" "read_views_results" {
  project = var.project_id
  role    = "roles/datastore.viewer"
  member  = google_service_account.this["read"].member
  condition {
    title      = "${var.prefix}-dashboard-results-only"
    expression = "resource.name == \"${var.firestore_database_id}\""
  }
}

resource "google_storage_bucket_object" "source" {
  for_each = local.functions
  bucket   = var.runs_bucket
  # The archive's hash in the name redeploys a function when its code changes.
  name   = "pipeline/functions/${each.key}-${filemd5("${var.bundles_dir}/${each.key}.zip")}.zip"
  source = "${var.bundles_dir}/${each.key}.zip"
}

resource "google_cloudfunctions2_function" "this" {
  for_each    = local.functions
  project     = var.project_id
  name        = "${var.prefix}-${each.key}"
  location    = var.region
  description = each.value.description
  labels      = var.labels

  build_config {
    runtime           = "python312"
    entry_point       = each.key
    service_account   = var.builder_service_account
    docker_repository = var.builder_repository
    source {
      storage_source {
        bucket = var.runs_bucket
        object = google_storage_bucket_object.source[each.key].name
      }
    }
  }

  service_config {
    service_account_email          = google_service_account.this[each.key].email
    available_memory               = "512M"
    timeout_seconds                = 60
    max_instance_count             = var.max_instances
    ingress_settings               = "ALLOW_ALL"
    all_traffic_on_latest_revision = true
    environment_variables = merge(each.value.env, {
      GATEBENCH_PROJECT = var.project_id
      GATEBENCH_ORIGINS = join(",", var.origins)
    })
  }
}

resource "google_cloud_run_v2_service_iam_member" "invokers" {
  for_each = local.invokers
  project  = var.project_id
  location = var.region
  name     = google_cloudfunctions2_function.this[each.value.function].service_config[0].service
  role     = "roles/run.invoker"
  member   = each.value.member
}
