output "pull" {
  description = "Image reference → what the VM pulls."
  value       = local.pull
}
