variable "cors" {
  description = "Browser origins, methods and request headers allowed (null: no CORS)."
  type = object({
    origins = list(string)
    methods = list(string)
    headers = list(string)
  })
  default = null
}

variable "conditional_iam" {
  description = "Grants limited to the objects whose name starts with `prefix` (an IAM condition on the object's name): a role, a member, a prefix. Such a grant never covers listing (its resource is the bucket)."
  type = list(object({
    role   = string
    member = string
    prefix = string
  }))
  default = []
  validation {
    condition     = alltrue([for g in var.conditional_iam : !contains(["allUsers", "allAuthenticatedUsers"], g.member) && can(regex("^[a-z0-9][a-z0-9_./-]*/$", g.prefix))])
    error_message = "conditional_iam: never a public member; prefix is a folder ending with a slash (for example \"runs/\")."
  }
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

variable "keep_noncurrent_days" {
  description = "With versioning: a replaced or deleted object's old versions are deleted after this many days (null: kept)."
  type        = number
  default     = null
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

variable "versioning" {
  description = "Keep every object's earlier versions (Object Versioning): what HashiCorp advises for a bucket holding Terraform state."
  type        = bool
  default     = false
}
