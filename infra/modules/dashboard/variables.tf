variable "builder_repository" {
  description = "Artifact Registry repository the builder account pushes the functions' images to (modules/functions; projects/P/locations/L/repositories/R)."
  type        = string
}

variable "builder_service_account" {
  description = "Full resource name of the service account that builds the functions' containers (modules/functions)."
  type        = string
}

variable "bundles_dir" {
  description = "Folder with read.zip and upload.zip from `make bundle`."
  type        = string
}

variable "firestore_database" {
  description = "Id of the results Firestore database the read function answers from."
  type        = string
}

variable "firestore_database_id" {
  description = "Full resource name of that database (projects/P/databases/D), for the IAM condition."
  type        = string
}

variable "labels" {
  description = "Labels of the functions."
  type        = map(string)
  default     = {}
}

variable "max_instances" {
  description = "Upper bound of instances per function."
  type        = number
  default     = 5
}

variable "origins" {
  description = "Origins of the site allowed to call the functions from a browser (CORS); never \"*\"."
  type        = list(string)
}

variable "prefix" {
  description = "Prefix of resource names."
  type        = string
}

variable "project_id" {
  description = "Project of the functions."
  type        = string
}

variable "public_read" {
  description = "Let anyone with the URL call the read function (allUsers run.invoker): run results become public."
  type        = bool
  default     = false
}

variable "public_upload" {
  description = "Let anyone with the URL call the upload function (allUsers run.invoker): anyone may start runs, which create VMs."
  type        = bool
  default     = false
}

variable "region" {
  description = "Region of the functions."
  type        = string
}

variable "runs_bucket" {
  description = "Runs bucket: holds the functions' source archives."
  type        = string
}

variable "spec_prefix" {
  description = "Prefix of the uploads bucket whose objects start a run; signed uploads go under it."
  type        = string
}

variable "uploads_bucket" {
  description = "The uploads bucket: signed PUTs go there."
  type        = string
}

variable "users" {
  description = "Principals allowed to call both functions (run.invoker) with an ID token."
  type        = list(string)
  default     = []
}
