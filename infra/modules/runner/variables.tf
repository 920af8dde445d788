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

variable "publishers" {
  description = "Members allowed to push the runner image (whoever runs `make runner-image`)."
  type        = list(string)
  default     = []
}

variable "region" {
  description = "Region of the repository."
  type        = string
}
