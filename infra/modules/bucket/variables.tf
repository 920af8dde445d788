variable "cors" {
  description = "Browser origins, methods and request headers allowed (null: no CORS)."
  type = object({
    origins = list(string)
    methods = list(string)
    headers = list(string)
  })
  default = null
}

variable "iam" {
  description = "Role → members granted on this bucket only. Public principals are refused."
  type        = map(list(string))
  default     = {}
  validation {
    condition     = alltrue([for members in values(var.iam) : alltrue([for m in members : !contains(["allUsers", "allAuthenticatedUsers"], m)])])
    error_message = "iam: allUsers and allAuthenticatedUsers are never granted; the buckets stay private."
  }
}

variable "labels" {
  description = "Labels of the bucket."
  type        = map(string)
  default     = {}
}

variable "lifecycle_rules" {
  description = "Objects matching every condition (prefixes and suffixes) are deleted after age_days."
  type = list(object({
    age_days = number
    prefixes = list(string)
    suffixes = list(string)
  }))
  default = []
}

variable "location" {
  description = "Bucket location (a region)."
  type        = string
}

variable "name" {
  description = "Globally unique bucket name."
  type        = string
}

variable "project_id" {
  description = "Project of the bucket."
  type        = string
}
