# A private bucket: uniform bucket-level access, public access prevention enforced, IAM by
# role (bucket-wide, or limited to a folder by a condition on the object's name), optional CORS
# (browser uploads), lifecycle deletion rules and Object Versioning.

resource "google_storage_bucket" "this" {
  project                     = var.project_id
  name                        = var.name
  location                    = var.location
  labels                      = var.labels
  storage_class               = "STANDARD"
  uniform_bucket_level_access = true
  public_access_prevention    = "enforced"
  force_destroy               = false

  versioning {
    enabled = var.versioning
  }

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
        matches_prefix = length(lifecycle_rule.value.prefixes) == 0 ? null : lifecycle_rule.value.prefixes
        matches_suffix = length(lifecycle_rule.value.suffixes) == 0 ? null : lifecycle_rule.value.suffixes
      }
      action {
        type = "Delete"
      }
    }
  }

  dynamic "lifecycle_rule" {
    for_each = var.keep_noncurrent_days == null ? [] : [var.keep_noncurrent_days]
    content {
      condition {
        days_since_noncurrent_time = lifecycle_rule.value
        with_state                 = "ARCHIVED"
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

resource "google_storage_bucket_iam_member" "conditional" {
  for_each = { for g in var.conditional_iam : "${g.role} ${g.member} ${g.prefix}" => g }
  bucket   = google_storage_bucket.this.name
  role     = each.value.role
  member   = each.value.member
  condition {
    title       = substr(replace("${each.value.prefix}${split("/", each.value.role)[1]}", "/[^A-Za-z0-9_.-]/", "-"), 0, 100)
    description = "Only objects under ${each.value.prefix}"
    expression  = "resource.name.startsWith(\"projects/_/buckets/${var.name}/objects/${each.value.prefix}\")"
  }
}
