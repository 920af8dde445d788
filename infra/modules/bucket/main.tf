# A private bucket: uniform bucket-level access, public access prevention enforced, IAM by
# role, optional CORS (browser uploads) and lifecycle deletion rules.

resource "google_storage_bucket" "this" {
  project                     = var.project_id
  name                        = var.name
  location                    = var.location
  labels                      = var.labels
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  dynamic "cors" {
    for_each = var.cors == null ? [] : [var.cors]
    content {
      origin          = cors.value.origins
      method          = cors.value.methods
      response_header = cors.value.headers
      max_age_seconds = 3600
    }
  }

  dynamic "lifecycle_rule" {
    for_each = var.lifecycle_rules
    content {
      condition {
        age            = lifecycle_rule.value.age_days
        matches_prefix = lifecycle_rule.value.prefixes
        matches_suffix = lifecycle_rule.value.suffixes
      }
      action {
        type = "Delete"
      }
    }
  }
}

locals {
  bindings = flatten([
    for role, members in var.iam : [for member in distinct(members) : { role = role, member = member }]
  ])
}

resource "google_storage_bucket_iam_member" "members" {
  for_each = { for b in local.bindings : "${b.role} ${b.member}" => b }
  bucket   = google_storage_bucket.this.name
  role     = each.value.role
  member   = each.value.member
}
