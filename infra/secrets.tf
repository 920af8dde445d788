# The JWT signing key of runs whose plan signs its tokens (x-gatebench auth.jwt): a Secret
# Manager secret the operator creates and fills (docs/cloud.md, "Signed tokens"), never a
# Terraform variable's value and never an object of a bucket. Only the tester VMs' service
# account may read it, on that secret alone: a tester signs the run's tokens itself just before
# the load, and they live in a temporary file on the tester until the load ends. The local
# pipeline's Secret Manager stand-in (tests/cloud/secretgate.py) reads this grant.
resource "google_secret_manager_secret_iam_member" "tester_signing_key" {
  count     = var.jwt_signer == "" ? 0 : 1
  project   = var.project_id
  secret_id = var.jwt_signer
  role      = "roles/secretmanager.secretAccessor"
  member    = module.runner.vm_members["tester"]

  depends_on = [google_project_service.enabled]
}

# The valid keys of runs whose plan has auth.api_key policies: a Secret Manager secret the
# operator creates and fills (docs/cloud.md, "API keys"), keys comma-separated. The gateway VMs'
# service account reads it just before the gateway starts and writes the key-bearing files
# into the gateway's folder on the VM (gatebench cloud gateway-config); the tester VMs' reads it
# to send the first key. Nothing else may: the bucket holds configurations without keys.
resource "google_secret_manager_secret_iam_member" "gateway_api_clients" {
  count     = var.api_clients == "" ? 0 : 1
  project   = var.project_id
  secret_id = var.api_clients
  role      = "roles/secretmanager.secretAccessor"
  member    = module.runner.vm_members["gateway"]

  depends_on = [google_project_service.enabled]
}

resource "google_secret_manager_secret_iam_member" "tester_api_clients" {
  count     = var.api_clients == "" ? 0 : 1
  project   = var.project_id
  secret_id = var.api_clients
  role      = "roles/secretmanager.secretAccessor"
  member    = module.runner.vm_members["tester"]

  depends_on = [google_project_service.enabled]
}
