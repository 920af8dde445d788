# What each VM role may do with the runs bucket's objects, and nothing more: the single table
# of those grants (the local pipeline's storage stand-in reads this table too). Each entry is
# granted on the runs bucket with an IAM condition on the object's name: it starts with
# `prefix`, when `folder` is set the next folder after the run's is `folder` (IAM's extract():
# the text up to the first `/FOLDER/` is a single name), and when `suffix` is not empty it
# ends with `suffix`. Object names are
# runs/RUN/... (src/gatebench/cloud); the run id sits between prefix and suffix, so a grant
# covers the same object of every run (the service accounts serve every run).
#
#   backend: reads runs/RUN/backend.json and, for a mock backend, runs/RUN/mock-backend.json;
#            when it cannot start the backend (gatebench cloud backend) it creates
#            runs/RUN/backend/error.json with the reason, which the tester reports.
#   gateway: reads the configurations, runs/RUN/configs/... (RUN one folder name), the fleet,
#            the render input (its API keys' configure step) and the testers' load-done markers
#            (its meter): never a workload, raw log, row or sample of any run, nor pipeline/. A
#            gateway container on the host network can ask the metadata server for this
#            account's token: these grants are what it could then do (docs/cloud.md, "What a
#            gateway container can reach"). Its meter (gatebench cloud meter) writes runs/RUN/cgroup/GATEWAY.jsonl,
#            again every few seconds (objectUser: overwrite); when it cannot write its API keys
#            (gatebench cloud gateway-config) it creates runs/RUN/gateways/GATEWAY/config-error.json
#            with the reason, which the tester reports. In a scale or change-under-load run its
#            live agent (gatebench cloud live-gateway) reads the tester's requests,
#            runs/RUN/live/GATEWAY/request.json, and answers in runs/RUN/live/GATEWAY/answer.json
#            (objectUser: one object, replaced at every answer); and nothing else.
#   tester:  reads runs/RUN/workload.json, backend.json and the load build's markers (runs/);
#            creates raw logs, raw/RUN/gatling/simulation.log (never overwriting one); writes its own two markers, again after
#            a restart (objectUser: overwrite). With several testers, tester T > 0 writes
#            runs/RUN/tT/tester/{ready,load-done}.json (the same suffixes) and
#            raw/RUN/gatling-tT/simulation.log. A capacity run (docs/capacity.md): tester 0
#            creates each other tester's share of a probe, runs/RUN/capacity/probes/N/tT/share.json,
#            and at the end runs/RUN/capacity/campaign.json; tester T creates its records,
#            runs/RUN/capacity/probes/N/tT/loadgen.records (never overwriting any).
#            In a scale or change-under-load run it writes
#            its requests to each gateway VM's agent, runs/RUN/live/GATEWAY/request.json, and each
#            result, runs/RUN/live/GATEWAY/STEP.result.json (objectUser: replaced, as a restarted
#            tester measures again).
locals {
  vm_object_access = {
    backend = [
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/backend.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/mock-backend.json" },
      { role = "roles/storage.objectCreator", prefix = "runs/", folder = "backend", suffix = "/error.json" },
    ]
    gateway = [
      { role = "roles/storage.objectViewer", prefix = "runs/", folder = "configs", suffix = "" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/fleet.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/render-input.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "/tester/load-done.json" },
      { role = "roles/storage.objectUser", prefix = "runs/", folder = "cgroup", suffix = ".jsonl" },
      { role = "roles/storage.objectCreator", prefix = "runs/", folder = "gateways", suffix = "/config-error.json" },
      { role = "roles/storage.objectViewer", prefix = "runs/", folder = "live", suffix = "/request.json" },
      { role = "roles/storage.objectUser", prefix = "runs/", folder = "live", suffix = "/answer.json" },
    ]
    tester = [
      { role = "roles/storage.objectViewer", prefix = "runs/", suffix = "" },
      { role = "roles/storage.objectCreator", prefix = "raw/", suffix = "/simulation.log" },
      { role = "roles/storage.objectUser", prefix = "runs/", suffix = "/tester/ready.json" },
      { role = "roles/storage.objectUser", prefix = "runs/", suffix = "/tester/load-done.json" },
      { role = "roles/storage.objectCreator", prefix = "runs/", folder = "capacity", suffix = "/share.json" },
      { role = "roles/storage.objectCreator", prefix = "runs/", folder = "capacity", suffix = "/loadgen.records" },
      { role = "roles/storage.objectCreator", prefix = "runs/", folder = "capacity", suffix = "/campaign.json" },
      { role = "roles/storage.objectUser", prefix = "runs/", folder = "live", suffix = "/request.json" },
      { role = "roles/storage.objectUser", prefix = "runs/", folder = "live", suffix = ".result.json" },
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
