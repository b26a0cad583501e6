#!/usr/bin/env bash
# Create the two deployment environments the clusterfab workflow uses, deployable from `main` only, with
# required reviewers on `production`. Needs the GitHub CLI (`gh auth login`) with admin rights on the repo.
#
#   examples/ci/setup-github-environments.sh OWNER/REPO REVIEWER_USER_ID [REVIEWER_USER_ID...]
#
# (a user id: `gh api users/NAME --jq .id`). Secrets and variables then go into each environment:
#   gh secret set PULUMI_ACCESS_TOKEN --env dev --repo OWNER/REPO
#   gh variable set AWS_ROLE_ARN --env dev --body arn:aws:iam::111111111111:role/clusterfab-dev --repo OWNER/REPO
# and the same for `production` with its own role (see aws-oidc-trust-*.json for the roles' trust).
set -euo pipefail

repo="${1:?usage: $0 OWNER/REPO REVIEWER_USER_ID...}"
shift
[ "$#" -ge 1 ] || { echo "give at least one reviewer user id for production" >&2; exit 2; }

reviewers=""
for id in "$@"; do
  reviewers+="${reviewers:+,}{\"type\":\"User\",\"id\":$id}"
done

environment() { # name, extra JSON fields
  gh api --method PUT "repos/$repo/environments/$1" --input - <<JSON
{"deployment_branch_policy": {"protected_branches": false, "custom_branch_policies": true}$2}
JSON
  gh api --method POST "repos/$repo/environments/$1/deployment-branch-policies" \
    -f name=main -f type=branch >/dev/null
}

environment dev ""
environment production ", \"reviewers\": [$reviewers], \"prevent_self_review\": true"
echo "environments dev and production on $repo: deployable from main only; production needs a review"
