# Where results live: a Firestore (native mode) database for runs, measurements and scores,
# and a BigQuery table of flat rows (one per run, target, workload, repetition and metric)
# with a summary view for Looker Studio.

resource "google_firestore_database" "this" {
  project     = var.project_id
  name        = "${var.prefix}-results"
  location_id = var.firestore_location
  type        = "FIRESTORE_NATIVE"
  # protect_results (the default): destroy leaves the database and its runs in the project.
  delete_protection_state = var.protect_results ? "DELETE_PROTECTION_ENABLED" : "DELETE_PROTECTION_DISABLED"
  deletion_policy         = var.protect_results ? "ABANDON" : "DELETE"
}

# Read and write documents of this database only (an IAM condition on its name).
resource "google_project_iam_member" "firestore_users" {
  for_each = toset(var.firestore_users)
  project  = var.project_id
  role     = "roles/datastore.user"
  member   = each.value
  condition {
    title      = "${var.prefix}-results-database-only"
    expression = "resource.name == \"${google_firestore_database.this.id}\""
  }
}

resource "google_bigquery_dataset" "this" {
  project                    = var.project_id
  dataset_id                 = replace("${var.prefix}_gatebench", "-", "_")
  location                   = var.bigquery_location
  labels                     = var.labels
  description                = "gatebench results: flat measurement rows and the Looker Studio view."
  delete_contents_on_destroy = !var.protect_results
}

resource "google_bigquery_table" "measurements" {
  project             = var.project_id
  dataset_id          = google_bigquery_dataset.this.dataset_id
  table_id            = "measurements"
  labels              = var.labels
  description         = "gatebench's flat rows: one number per row (measurements, statistics over repetitions, overhead, scores); docs/results.md."
  schema              = file("${path.module}/../../../src/gatebench/core/report/bigquery_schema.json")
  deletion_protection = var.protect_results
  time_partitioning {
    type = "DAY"
  }
  clustering = ["run_id", "target", "metric"]
}

resource "google_bigquery_table" "summary" {
  project             = var.project_id
  dataset_id          = google_bigquery_dataset.this.dataset_id
  table_id            = "measurements_summary"
  labels              = var.labels
  description         = "The statistics over repetitions and the scores of every run (no per-repetition rows): what a Looker Studio report charts."
  deletion_protection = false
  view {
    use_legacy_sql = false
    query          = templatefile("${path.module}/summary.sql.tftpl", { table = "${var.project_id}.${google_bigquery_dataset.this.dataset_id}.${google_bigquery_table.measurements.table_id}" })
  }
}

resource "google_bigquery_dataset_iam_member" "writers" {
  for_each   = toset(var.writers)
  project    = var.project_id
  dataset_id = google_bigquery_dataset.this.dataset_id
  role       = "roles/bigquery.dataEditor"
  member     = each.value
}

resource "google_bigquery_dataset_iam_member" "readers" {
  for_each   = toset(var.readers)
  project    = var.project_id
  dataset_id = google_bigquery_dataset.this.dataset_id
  role       = "roles/bigquery.dataViewer"
  member     = each.value
}

# Load jobs (writers) and queries from Looker Studio (readers) run as jobs in this project.
resource "google_project_iam_member" "job_users" {
  for_each = toset(concat(var.writers, var.readers))
  project  = var.project_id
  role     = "roles/bigquery.jobUser"
  member   = each.value
}
