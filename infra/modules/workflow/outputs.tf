output "name" {
  description = "Workflow name."
  value       = google_workflows_workflow.this.name
}

output "service_account_member" {
  description = "IAM member of the workflow's service account."
  value       = google_service_account.workflow.member
}
