output "network" {
  description = "Self link of the benchmark network."
  value       = google_compute_network.this.self_link
}

output "ports" {
  description = "Ports the gateways, the backend and tester 0's phase barrier listen on."
  value       = var.ports
}

output "subnetwork" {
  description = "Self link of the benchmark subnet."
  value       = google_compute_subnetwork.this.self_link
}

output "tags" {
  description = "Network tags of the tester, gateway and backend VMs."
  value       = local.tags
}
