# Where a VM pulls each gateway image from. The renderers name Docker Hub images ("nginx:1.22.1",
# "envoyproxy/envoy:v1.40.0"); the VMs share one NAT address, so pulling them from docker.io
# meets Docker Hub's anonymous pull limit. Every Docker Hub reference is rewritten to the
# project's Docker Hub remote repository (infra/modules/runner), which pulls each image once
# and caches it. A reference naming another registry (a host with a dot or a port before the
# first slash) is kept as it is. No provider: `terraform console` evaluates this module
# offline (tests/unit/test_terraform_templates.py).

locals {
  hub = {
    for ref in var.images : ref => trimprefix(trimprefix(ref, "docker.io/"), "index.docker.io/")
    if startswith(ref, "docker.io/") || startswith(ref, "index.docker.io/") || !can(regex("^[^/]*[.:][^/]*/", ref))
  }
  pull = {
    for ref in var.images : ref => (
      contains(keys(local.hub), ref)
      ? "${var.mirror}/${length(split("/", split(":", split("@", local.hub[ref])[0])[0])) == 1 ? "library/" : ""}${local.hub[ref]}"
      : ref
    )
  }
}
