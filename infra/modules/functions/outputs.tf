output "http_services" {
  description = "The Cloud Run services behind the HTTP functions (for run.invoker grants)."
  value = {
    for name in ["parse", "render", "score"] :
    name => google_cloudfunctions2_function.this[name].service_config[0].service
  }
}

output "service_account_email" {
  description = "Runtime service account of the functions."
  value       = google_service_account.runtime.email
}

output "service_account_member" {
  description = "IAM member of the functions' runtime service account."
  value       = google_service_account.runtime.member
}

output "urls" {
  description = "HTTPS endpoints of the HTTP functions."
  value = {
    for name in ["parse", "render", "score"] :
    name => google_cloudfunctions2_function.this[name].service_config[0].uri
  }
}

output "builder_member" {
  description = "IAM member of the service account that builds the functions (reads their sources)."
  value       = google_service_account.builder.member
}

output "builder_repository" {
  description = "The repository of the functions' images, as build_config.docker_repository takes it."
  value       = google_artifact_registry_repository.images.id
}

output "builder_service_account" {
  description = "Full resource name of the service account that builds the functions' containers, once its grants have propagated (the dashboard's functions are built with it)."
  value       = google_service_account.builder.id
  depends_on  = [time_sleep.builder_grants]
}
