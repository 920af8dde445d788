output "build_member" {
  description = "IAM member of the Cloud Build service account."
  value       = google_service_account.build.member
}

output "build_service_account" {
  description = "The Cloud Build service account (id is the full resource name builds take)."
  value = {
    id    = google_service_account.build.id
    name  = google_service_account.build.name
    email = google_service_account.build.email
  }
}

output "gateway_member" {
  description = "IAM member of the gateway VMs' service account."
  value       = google_service_account.vm["gateway"].member
}

output "image" {
  description = "Runner image reference."
  value       = "${google_artifact_registry_repository.this.location}-docker.pkg.dev/${var.project_id}/${google_artifact_registry_repository.this.repository_id}/runner:${var.image_tag}"
}

output "tester_member" {
  description = "IAM member of the tester VM's service account."
  value       = google_service_account.vm["tester"].member
}

output "vm_members" {
  description = "IAM member of the tester, gateway and backend service accounts."
  value       = { for role, sa in google_service_account.vm : role => sa.member }
}

output "vm_service_accounts" {
  description = "Emails of the tester, gateway and backend service accounts."
  value       = { for role, sa in google_service_account.vm : role => sa.email }
}
