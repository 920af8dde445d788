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
