# gatebench on Google Cloud: uploads bucket → Eventarc → Workflows → Cloud Functions →
# Cloud Build + per-run VMs (infra/vms) → Firestore and BigQuery; the dashboard (static site
# in the runs bucket, read and upload functions). See infra/README.md.

# The image the runs' VMs boot, looked up at the apply: one that does not exist (any more)
# stops the apply, not the first run's provision build.
data "google_compute_image" "vm" {
  project = "cos-cloud"
  name    = var.vm_image
}

locals {
  labels = merge(var.labels, { app = "gatebench" })
  # Tied to the region unless chosen: the runs bucket, the network and the functions are there.
  bigquery_location  = coalesce(var.bigquery_location, var.region)
  firestore_location = coalesce(var.firestore_location, var.region)
  builds = {
    for name in ["provision", "load", "teardown"] :
    name => jsonencode(yamldecode(file("${path.module}/../cloudbuild/${name}.yaml")))
  }
  # What the functions and the Cloud Build steps read about this deployment
  # (gs://RUNS_BUCKET/pipeline/settings.json). No secrets: names and limits only.
  settings = {
    project      = var.project_id
    region       = var.region
    zone         = var.zone
    prefix       = var.prefix
    network      = module.network.network
    subnetwork   = module.network.subnetwork
    tags         = module.network.tags
    runner_image = module.runner.image
    vm_image     = "projects/cos-cloud/global/images/${data.google_compute_image.vm.name}"
    accounts     = module.runner.vm_service_accounts
    labels       = local.labels
    limits       = var.limits
    # What a run may cost: the parse step refuses other machine types and a higher estimate.
    allowed_machine_types = var.allowed_machine_types
    max_run_cost_usd      = var.max_run_cost_usd
    layout                = "dns"
    # Cloud NAT exists: a plan may benchmark a service on the internet (the parse step refuses
    # one otherwise).
    outside_access = var.outside_access
    uploads        = module.uploads.name
    spec_prefix    = var.spec_prefix
    bigquery       = module.results.bigquery
    firestore_db   = module.results.firestore_database
    raw_retention  = var.raw_log_retention_days
    # A name, never the key: tester VMs read the secret itself (secrets.tf).
    jwt_signer = var.jwt_signer
    # A name, never a key: gateway VMs (and testers) read the secret itself (secrets.tf).
    api_clients = var.api_clients
  }
}

module "uploads" {
  source     = "./modules/bucket"
  project_id = var.project_id
  name       = "${var.prefix}-uploads-${var.project_id}"
  location   = var.region
  labels     = local.labels
  # The dashboard's signed PUT from the site's origin, with the two headers the URL signs.
  cors = {
    origins = var.upload_origins
    methods = ["PUT"]
    headers = ["Content-Type", "x-goog-meta-gatebench"]
  }
  iam = {
    "roles/storage.objectCreator" = var.users
    "roles/storage.objectViewer"  = concat(var.users, [module.functions.service_account_member])
  }
  depends_on = [google_project_service.enabled]
}

module "runs" {
  source     = "./modules/bucket"
  project_id = var.project_id
  name       = "${var.prefix}-runs-${var.project_id}"
  location   = var.region
  labels     = local.labels
  lifecycle_rules = [
    {
      age_days = var.raw_log_retention_days
      prefixes = ["raw/"]
      suffixes = ["/simulation.log"]
    },
    # Every other object of a run (configs, markers, rows, samples) after run_retention_days;
    # the results stay in Firestore and BigQuery.
    {
      age_days = var.run_retention_days
      prefixes = ["runs/"]
      suffixes = []
    },
    # The sources `gcloud builds submit` staged for the runner image's builds (a tarball of
    # the checkout each time), after build_source_retention_days.
    {
      age_days = var.build_source_retention_days
      prefixes = ["pipeline/source/"]
      suffixes = []
    },
  ]
  iam = {
    # Functions and builds read the settings and list a run's objects; the workflow's
    # BigQuery load job reads rows. The VMs get object-level grants only (vm_access.tf).
    "roles/storage.objectViewer" = concat(var.users, [
      module.workflow.service_account_member,
      module.functions.service_account_member,
      module.runner.build_member,
    ])
  }
  # Writes only under runs/: functions write configs, rows and scores, builds saved variables
  # and markers. Everything else (pipeline/settings.json, which the VMs' variables come from,
  # and the functions' sources) is written by the deploy alone (Terraform, as you).
  conditional_iam = [
    { role = "roles/storage.objectAdmin", member = module.functions.service_account_member, prefix = "runs/" },
    { role = "roles/storage.objectAdmin", member = module.runner.build_member, prefix = "runs/" },
    # Raw logs are created by the testers with write policies the build account signs
    # (gatebench.cloud._writes): a signed upload acts as its signer, which creates there and
    # never overwrites.
    { role = "roles/storage.objectCreator", member = module.runner.build_member, prefix = "raw/" },
    # The functions' builder reads their source archives, nothing else.
    { role = "roles/storage.objectViewer", member = module.functions.builder_member, prefix = "pipeline/functions/" },
  ]
  depends_on = [google_project_service.enabled]
}

# Terraform state: each run's VMs (infra/vms, written by the provision and teardown builds under
# runs/RUN/), and this deployment's own once you move it here (docs/cloud.md, "First deploy",
# under deployment/, written by you alone). Versioned, as HashiCorp advises for the gcs backend:
# a state overwritten by mistake can be restored; old versions go after state_versions_days.
module "state" {
  source               = "./modules/bucket"
  project_id           = var.project_id
  name                 = "${var.prefix}-tfstate-${var.project_id}"
  location             = var.region
  labels               = local.labels
  versioning           = true
  keep_noncurrent_days = var.state_versions_days
  # A run's state (and a lock a killed build left) once the run is long over: its VMs deleted
  # themselves after limits.vm_lifetime at the latest. The object becomes an old version, gone
  # after state_versions_days. The deployment's own state (deployment/) is never aged.
  lifecycle_rules = [
    {
      age_days = var.run_state_retention_days
      prefixes = ["runs/"]
      suffixes = []
    },
  ]
  iam = {
    # `terraform init` lists the bucket's states.
    "roles/storage.objectViewer" = [module.runner.build_member]
  }
  conditional_iam = [
    { role = "roles/storage.objectAdmin", member = module.runner.build_member, prefix = "runs/" },
  ]
  depends_on = [google_project_service.enabled]
}

module "network" {
  source     = "./modules/network"
  project_id = var.project_id
  prefix     = var.prefix
  region     = var.region
  nat        = var.outside_access
  depends_on = [google_project_service.enabled]
}

module "results" {
  source             = "./modules/results-store"
  project_id         = var.project_id
  prefix             = var.prefix
  firestore_location = local.firestore_location
  bigquery_location  = local.bigquery_location
  protect_results    = var.protect_results
  labels             = local.labels
  writers            = [module.workflow.service_account_member]
  readers            = var.users
  firestore_users    = [module.workflow.service_account_member, module.functions.service_account_member]
  depends_on         = [google_project_service.enabled]
}

module "runner" {
  source     = "./modules/runner"
  project_id = var.project_id
  prefix     = var.prefix
  region     = var.region
  image_tag  = var.runner_image_tag
  labels     = local.labels
  depends_on = [google_project_service.enabled]
}

module "functions" {
  source      = "./modules/functions"
  project_id  = var.project_id
  prefix      = var.prefix
  region      = var.region
  labels      = local.labels
  bundles_dir = var.function_bundles_dir
  runs_bucket = module.runs.name
  env = {
    GATEBENCH_RUNS_BUCKET        = module.runs.name
    GATEBENCH_FIRESTORE_DATABASE = module.results.firestore_database
  }
  # The raw logs' notification to the ingest function: after the Storage agent may publish
  # (iam.tf).
  depends_on = [
    google_project_service.enabled,
    google_project_iam_member.gcs_agent_publishes_events,
    time_sleep.event_permissions,
  ]
}

module "dashboard" {
  source                  = "./modules/dashboard"
  project_id              = var.project_id
  prefix                  = var.prefix
  region                  = var.region
  labels                  = local.labels
  bundles_dir             = var.function_bundles_dir
  runs_bucket             = module.runs.name
  builder_service_account = module.functions.builder_service_account
  builder_repository      = module.functions.builder_repository
  uploads_bucket          = module.uploads.name
  spec_prefix             = var.spec_prefix
  firestore_database      = module.results.firestore_database
  firestore_database_id   = module.results.firestore_database_id
  origins                 = var.upload_origins
  users                   = var.users
  public_read             = var.public_read
  public_upload           = var.public_upload
  depends_on              = [google_project_service.enabled]
}

module "workflow" {
  source         = "./modules/workflow"
  project_id     = var.project_id
  prefix         = var.prefix
  region         = var.region
  labels         = local.labels
  source_file    = "${path.module}/../workflows/benchmark.yaml"
  uploads_bucket = module.uploads.name
  invoke         = module.functions.http_services
  build_account  = module.runner.build_service_account
  env = {
    GATEBENCH_PARSE_URL             = module.functions.urls.parse
    GATEBENCH_RENDER_URL            = module.functions.urls.render
    GATEBENCH_SCORE_URL             = module.functions.urls.score
    GATEBENCH_RUNS_BUCKET           = module.runs.name
    GATEBENCH_STATE_BUCKET          = module.state.name
    GATEBENCH_SPEC_PREFIX           = var.spec_prefix
    GATEBENCH_FIRESTORE_DATABASE    = module.results.firestore_database
    GATEBENCH_BQ_DATASET            = module.results.bigquery.dataset
    GATEBENCH_BQ_TABLE              = module.results.bigquery.table
    GATEBENCH_BUILD_LOCATION        = var.build_region
    GATEBENCH_BUILD_SERVICE_ACCOUNT = module.runner.build_service_account.id
    GATEBENCH_RUNNER_IMAGE          = module.runner.image
    GATEBENCH_BUILD_PROVISION       = local.builds.provision
    GATEBENCH_BUILD_LOAD            = local.builds.load
    GATEBENCH_BUILD_TEARDOWN        = local.builds.teardown
    GATEBENCH_PROVISION_TIMEOUT_S   = tostring(var.limits.provision_s)
    GATEBENCH_LOAD_TIMEOUT_S        = tostring(var.limits.load_s)
    GATEBENCH_TEARDOWN_TIMEOUT_S    = tostring(var.limits.teardown_s)
    GATEBENCH_METER_WAIT_S          = tostring(var.limits.meter_wait_s)
  }
  # The uploads trigger: after the Storage agent may publish (iam.tf).
  depends_on = [
    google_project_service.enabled,
    google_project_iam_member.gcs_agent_publishes_events,
    time_sleep.event_permissions,
  ]
}

resource "google_storage_bucket_object" "settings" {
  name         = "pipeline/settings.json"
  bucket       = module.runs.name
  content_type = "application/json"
  content      = jsonencode(local.settings)

  lifecycle {
    precondition {
      condition     = startswith(var.zone, "${var.region}-")
      error_message = "zone: ${var.zone} is not in region ${var.region} (the VMs join the network there); choose a zone of ${var.region}."
    }
    precondition {
      # A BigQuery load reads the rows file from the runs bucket (in var.region): the dataset
      # is in that region, or in the multi-region holding it (US: us-*; EU: the regions in
      # member states of the European Union, which London and Zurich are not, as Cloud
      # Storage's "Bucket locations" page describes the EU multi-region).
      condition = (
        lower(local.bigquery_location) == lower(var.region)
        || (upper(local.bigquery_location) == "EU" && startswith(var.region, "europe-")
        && !contains(["europe-west2", "europe-west6"], var.region))
        || (upper(local.bigquery_location) == "US" && startswith(var.region, "us-"))
      )
      error_message = "bigquery_location: ${local.bigquery_location} cannot load rows from a bucket in ${var.region}; leave it null (the region) or use the multi-region containing ${var.region}."
    }
    precondition {
      # Anyone may start runs through a public upload form: what one run may cost is bounded
      # before it starts, not only alerted on by a billing budget afterwards.
      condition     = !var.public_upload || (length(var.allowed_machine_types) > 0 && var.max_run_cost_usd != null)
      error_message = "public_upload: a public upload form needs allowed_machine_types (for example [\"n2-standard-2\"]) and max_run_cost_usd (for example 5), which the parse step enforces on every upload."
    }
    precondition {
      condition     = var.run_state_retention_days * 86400 > var.limits.vm_lifetime
      error_message = "run_state_retention_days: ${var.run_state_retention_days} days is not longer than limits.vm_lifetime (${var.limits.vm_lifetime} s): a run's state must outlive its VMs."
    }
  }
}
