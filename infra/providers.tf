# Credentials come from the environment (gcloud application-default credentials or the CI's
# workload identity), never from variables.
provider "google" {
  project = var.project_id
  region  = var.region
}
