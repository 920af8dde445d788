# What each VM role may read of the runs bucket's objects, and nothing more: the single table of
# those grants (the local pipeline's storage stand-in reads this table too). Each entry is
# granted on the runs bucket with an IAM condition on the object's name: it starts with
# `prefix`, when `folder` is set the next folder after the run's is `folder` (IAM's extract():
# the text up to the first `/FOLDER/` is a single name), and when `suffix` is not empty it
# ends with `suffix`. Object names are runs/RUN/... (src/gatebench/cloud); the run id sits
# between prefix and suffix, so a grant covers the same object of every run (the service
# accounts serve every run).
#
# No VM account may write: an IAM grant to an account every run shares cannot tell one run's
# objects from another's. Each VM writes its own run's objects with the write policies the
# provision build signs for it (gatebench.cloud._writes: its metadata, gatebench-writes), and
# with nothing else.
#
#   backend: reads runs/RUN/backend.json and, for a mock backend, runs/RUN/mock-backend.json
#            (writes runs/RUN/backend/error.json when it cannot start the backend).
#   gateway: reads the configurations, runs/RUN/configs/... (RUN one folder name), the fleet,
#            the render input (its API keys' configure step), the testers' load-done markers
#            (its meter) and, in a scale or change-under-load run, the tester's requests to its
#            live agent, runs/RUN/live/GATEWAY/request.json, and its agent's own last answer,
#            .../answer.json (a restarted agent answers no request twice): never a workload,
#            raw log, row or sample of any run, nor pipeline/ (writes its meter's samples, its
#            config error and its agent's answers).
#   tester:  reads runs/ (the workload, backend.json, the load build's markers, the other
#            testers' capacity shares and records, its agents' answers); writes its markers,
#            its raw log (raw/RUN/...), a capacity run's objects and a scale run's requests and
#            results.
locals {
  vm_object_access = {
    backend = [
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/backend.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/mock-backend.json" },
    ]
    gateway = [
      { role = "roles/storage.objectViewer", prefix = "runs/", folder = "configs", suffix = "" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/fleet.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/render-input.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/tester/load-done.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", folder = "live", suffix = "/request.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", folder = "live", suffix = "/answer.json" },
    ]
    tester = [
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "" },
    ]
  }
  vm_object_grants = flatten([
    for vm, grants in local.vm_object_access : [
      for i, g in grants : merge({ folder = "" }, g, { vm = vm, key = "${vm}-${i}" })
    ]
  ])
}

resource "google_storage_bucket_iam_member" "vm_objects" {
  for_each = { for g in local.vm_object_grants : g.key => g }
  bucket   = module.runs.name
  role     = each.value.role
  member   = module.runner.vm_members[each.value.vm]

  condition {
    title       = "${var.prefix}-${each.key}"
    description = "${each.value.vm} VMs: objects ${each.value.prefix}*${each.value.folder == "" ? "" : "/${each.value.folder}/*"}${each.value.suffix}"
    expression = join(" && ", compact([
      "resource.name.startsWith(\"projects/_/buckets/${module.runs.name}/objects/${each.value.prefix}\")",
      each.value.folder == "" ? "" : "resource.name.extract(\"/objects/${each.value.prefix}{run}/${each.value.folder}/\") != \"\"",
      each.value.folder == "" ? "" : "resource.name.extract(\"/objects/${each.value.prefix}{run}/${each.value.folder}/\") == resource.name.extract(\"/objects/${each.value.prefix}{run}/\")",
      each.value.suffix == "" ? "" : "resource.name.endsWith(\"${each.value.suffix}\")",
    ]))
  }
}
