# tflint's bundled Terraform ruleset, every rule (runs offline; see tests/unit/test_terraform.py).
plugin "terraform" {
  enabled = true
  preset  = "all"
}
