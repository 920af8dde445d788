output "service_account_members" {
  description = "IAM members of the read and upload functions' service accounts."
  value       = { for name, sa in google_service_account.this : name => sa.member }
}

output "urls" {
  description = "HTTPS endpoints of the read and upload functions (the site's `api` and `upload.endpoint`, with a trailing slash)."
  value       = { for name, f in google_cloudfunctions2_function.this : name => "${f.service_config[0].uri}/" }
}
