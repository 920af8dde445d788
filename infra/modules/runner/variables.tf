variable "image_tag" {
  description = "Tag of the runner image the builds and VMs run."
  type        = string
}

variable "labels" {
  description = "Labels of the repository."
  type        = map(string)
  default     = {}
}

variable "prefix" {
  description = "Prefix of resource names."
  type        = string
}

variable "project_id" {
  description = "Project of the repository and service accounts."
  type        = string
}

variable "region" {
  description = "Region of the repository."
  type        = string
}

variable "untagged_image_days" {
  description = "Runner image versions no tag points at are deleted after this many days (the 5 newest are kept)."
  type        = number
  default     = 7
}
