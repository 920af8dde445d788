#!/bin/bash
# One Cloud Build step of cloudbuild/provision.yaml (apply) or cloudbuild/teardown.yaml
# (destroy): `terraform init`, then apply or destroy, in the same container. Cloud Build runs
# every step in a fresh container of the image and carries over only /workspace, while init
# writes the dependency lock file beside the configuration (here, in the image), not under
# TF_DATA_DIR: with init in a step of its own, apply would find no lock file.
#
#   terraform-step.sh apply|destroy VAR_FILE
#   environment: STATE_BUCKET, RUN_ID (state: gs://STATE_BUCKET/runs/RUN_ID), TF_DATA_DIR
#
# Destroy and a stale state lock: a provision build stopped at its timeout leaves the state
# locked. Teardown is started only after the provision build has ended (the workflow waits for
# the build's operation to be done, whatever its status), and no other build of this run takes
# the lock. So a lock taken before this step started belongs to a build that has ended: it is
# removed (force-unlock, by its id) and destroy runs again. A lock taken after this step
# started is someone else's live Terraform: left alone, and the step fails saying so.
set -euo pipefail

action=${1:-}
var_file=${2:-}
if [[ "$action" != apply && "$action" != destroy ]] || [[ -z "$var_file" ]]; then
  echo "usage: terraform-step.sh apply|destroy VAR_FILE (got: $*)" >&2
  exit 2
fi
started=$(date -u +%s)
cd "$(dirname "$0")"

terraform init -input=false -no-color \
  -backend-config="bucket=${STATE_BUCKET:?}" -backend-config="prefix=runs/${RUN_ID:?}"

if [[ "$action" == apply ]]; then
  exec terraform apply -input=false -no-color -auto-approve -lock-timeout=300s -var-file="$var_file"
fi

log=$(mktemp)
if terraform destroy -input=false -no-color -auto-approve -lock-timeout=60s -var-file="$var_file" 2>&1 | tee "$log"; then
  exit 0
fi
# Terraform's "Lock Info:" block (statemgr.LockInfo): "  ID:        ..." and
# "  Created:   2006-01-02 15:04:05.999999999 +0000 UTC".
lock_id=$(sed -nE 's/^[^[:alnum:]]*ID:[[:space:]]+([[:alnum:]_.-]+)[[:space:]]*$/\1/p' "$log" | head -n 1)
created=$(sed -nE 's/^[^[:alnum:]]*Created:[[:space:]]+([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]+)? ([+-][0-9]{4}).*$/\1 \3/p' "$log" | head -n 1)
if [[ -z "$lock_id" || -z "$created" ]]; then
  exit 1 # destroy failed for another reason: its own message says why
fi
created_s=$(date -u -d "$created" +%s)
if ((created_s >= started)); then
  echo "terraform-step.sh: the state lock $lock_id was taken at $created, after this step started: another Terraform run holds it; not removing it" >&2
  exit 1
fi
echo "terraform-step.sh: removing the state lock $lock_id taken at $created by a build that has ended"
terraform force-unlock -force "$lock_id"
exec terraform destroy -input=false -no-color -auto-approve -lock-timeout=60s -var-file="$var_file"
