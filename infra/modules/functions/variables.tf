variable "bundles_dir" {
  description = "Folder with parse.zip, render.zip and score.zip from `make bundle`."
  type        = string
}

variable "env" {
  description = "Environment variables of every function (names and ids only, never secrets)."
  type        = map(string)
  default     = {}
}

variable "labels" {
  description = "Labels of the functions."
  type        = map(string)
  default     = {}
}

variable "prefix" {
  description = "Prefix of resource names."
  type        = string
}

variable "project_id" {
  description = "Project of the functions."
  type        = string
}

variable "region" {
  description = "Region of the functions."
  type        = string
}

variable "runs_bucket" {
  description = "Runs bucket: holds the source archives, and notifies the ingest function of each raw log (raw/)."
  type        = string
}

variable "untagged_image_days" {
  description = "Function image versions no tag points at are deleted after this many days (the 5 newest are kept)."
  type        = number
  default     = 7
}
