variable "bigquery_location" {
  description = "Location of the BigQuery dataset."
  type        = string
}

variable "firestore_location" {
  description = "Location of the Firestore database."
  type        = string
}

variable "firestore_users" {
  description = "Members that read and write run documents (roles/datastore.user on this database only)."
  type        = list(string)
  default     = []
}

variable "labels" {
  description = "Labels of the dataset and tables."
  type        = map(string)
  default     = {}
}

variable "prefix" {
  description = "Prefix of resource names."
  type        = string
}

variable "project_id" {
  description = "Project of the database and dataset."
  type        = string
}

variable "readers" {
  description = "Members that query the results (Looker Studio viewers): BigQuery data viewer on the dataset and job user."
  type        = list(string)
  default     = []
}

variable "writers" {
  description = "Members that load rows (the workflow): BigQuery data editor on the dataset and job user."
  type        = list(string)
  default     = []
}

variable "protect_results" {
  description = "Keep the results through `terraform destroy`: Firestore's delete protection on and its database abandoned, the BigQuery table protected. False: destroy deletes them."
  type        = bool
  default     = true
}
