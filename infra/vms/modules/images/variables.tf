variable "images" {
  description = "Image references as the renderers name them."
  type        = list(string)
}

variable "mirror" {
  description = "The Docker Hub remote repository: REGION-docker.pkg.dev/PROJECT/REPOSITORY."
  type        = string
}
