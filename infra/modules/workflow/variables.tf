variable "build_account" {
  description = "The Cloud Build service account (name: full resource name) the workflow's builds run as."
  type = object({
    id    = string
    name  = string
    email = string
  })
}

variable "env" {
  description = "User environment variables of the workflow (see infra/README.md)."
  type        = map(string)
}

variable "invoke" {
  description = "Cloud Run services (behind the HTTP functions) the workflow may invoke."
  type        = map(string)
}

variable "labels" {
  description = "Labels of the workflow and trigger."
  type        = map(string)
  default     = {}
}

variable "prefix" {
  description = "Prefix of resource names."
  type        = string
}

variable "project_id" {
  description = "Project of the workflow."
  type        = string
}

variable "region" {
  description = "Region of the workflow and trigger (the uploads bucket's region)."
  type        = string
}

variable "source_file" {
  description = "Path of workflows/benchmark.yaml."
  type        = string
}

variable "uploads_bucket" {
  description = "Bucket whose finalized objects start the workflow."
  type        = string
}
