output "bigquery" {
  description = "Dataset, table and view ids."
  value = {
    dataset = google_bigquery_dataset.this.dataset_id
    table   = google_bigquery_table.measurements.table_id
    view    = google_bigquery_table.summary.table_id
  }
}

output "firestore_database" {
  description = "Firestore database id (not the full resource name)."
  value       = google_firestore_database.this.name
}

output "firestore_database_id" {
  description = "Firestore database full resource name (projects/P/databases/D), for IAM conditions."
  value       = google_firestore_database.this.id
}
