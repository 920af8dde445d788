# State lives in the deployment's versioned state bucket under runs/RUN_ID; the build passes
# bucket and prefix
# (`terraform init -backend-config=bucket=... -backend-config=prefix=...`).
terraform {
  backend "gcs" {}
}

provider "google" {
  project = var.project
  zone    = var.zone
}
