output "function_urls" {
  description = "HTTPS endpoints of the parse, render and score functions (invoked by the workflow with OIDC)."
  value       = module.functions.urls
}

output "looker_studio_url" {
  description = "Looker Studio Linking API URL: a report over the summary view, ready to save."
  value = join("", [
    "https://lookerstudio.google.com/reporting/create?r.reportName=gatebench",
    "&ds.ds0.datasourceName=gatebench%20results&ds.ds0.connector=bigQuery&ds.ds0.type=TABLE",
    "&ds.ds0.projectId=${var.project_id}",
    "&ds.ds0.datasetId=${module.results.bigquery.dataset}",
    "&ds.ds0.tableId=${module.results.bigquery.view}",
  ])
}

output "looker_studio_view" {
  description = "The BigQuery view a Looker Studio report reads (project.dataset.view)."
  value       = "${var.project_id}.${module.results.bigquery.dataset}.${module.results.bigquery.view}"
}

output "runner_image" {
  description = "The runner image the builds and VMs run; build and push it with the command in `runner_image_build_command`."
  value       = module.runner.image
}

output "runs_bucket" {
  description = "Bucket for run artefacts (rendered configs, raw logs, rows, Terraform state of the VMs) and the static frontend."
  value       = module.runs.name
}

output "uploads_bucket" {
  description = "Upload a spec to gs://BUCKET/<spec_prefix>NAME.yaml to start a run."
  value       = module.uploads.name
}

output "workflow" {
  description = "The workflow to run by hand: gcloud workflows run NAME --location REGION --data '{\"bucket\": ..., \"name\": ...}'."
  value       = module.workflow.name
}

output "dashboard_urls" {
  description = "The dashboard's read and upload functions: the site's `api` and `upload.endpoint`."
  value       = module.dashboard.urls
}

output "site_url" {
  description = "The dashboard, once exported to gs://RUNS_BUCKET/site/ (docs/cloud.md): opened by `users` signed in to Google."
  value       = "https://storage.cloud.google.com/${module.runs.name}/site/index.html"
}

output "site_export_command" {
  description = "Writes the dashboard site with its config.json for these functions; copy build/site to gs://RUNS_BUCKET/site/ afterwards."
  value       = "gatebench serve --export build/site --mode gcp --api ${module.dashboard.urls.read} --upload-endpoint ${module.dashboard.urls.upload}"
}

output "runner_image_build_command" {
  description = "Builds and pushes the runner image as the build service account (run it from the repository's root; cloudbuild/runner-image.yaml)."
  value = join(" ", [
    "gcloud builds submit --project ${var.project_id} --region ${var.build_region}",
    "--config cloudbuild/runner-image.yaml",
    "--service-account ${module.runner.build_service_account.id}",
    "--gcs-source-staging-dir gs://${module.runs.name}/pipeline/source",
    "--substitutions _IMAGE=${module.runner.image} .",
  ])
}

output "state_bucket" {
  description = "The versioned bucket of Terraform states: runs/RUN (each run's VMs) and deployment/ (this deployment's, once moved: backend_tf)."
  value       = module.state.name
}

output "backend_tf" {
  description = "A backend block that keeps this deployment's state in the state bucket: write it to infra/backend.tf, then `terraform -chdir=infra init -migrate-state` (docs/cloud.md, First deploy)."
  value       = "terraform {\n  backend \"gcs\" {\n    bucket = \"${module.state.name}\"\n    prefix = \"deployment\"\n  }\n}\n"
}
