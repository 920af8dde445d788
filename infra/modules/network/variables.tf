variable "cidr" {
  description = "Range of the benchmark subnet."
  type        = string
  default     = "10.80.0.0/20"
}

variable "ports" {
  description = "Ports the gateways, the backend and tester 0's phase barrier listen on (the per-run VM config uses the same: gatebench.cloud._layout): the backend's replicas from backend to backend_last, a change-under-load run's second echo backend on backend + 1 (gatebench.cloud._live), its TLS listener for the baseline (backend_tls) and the fault's control (backend_control, from the tester only)."
  type = object({
    gateway         = optional(number, 8000)
    backend         = optional(number, 8080)
    backend_last    = optional(number, 8095)
    backend_tls     = optional(number, 8443)
    backend_control = optional(number, 8079)
    barrier         = optional(number, 8090)
  })
  default = {}
}

variable "prefix" {
  description = "Prefix of resource names and network tags."
  type        = string
}

variable "project_id" {
  description = "Project of the network."
  type        = string
}

variable "region" {
  description = "Region of the subnet, router and NAT."
  type        = string
}

variable "nat" {
  description = "Create a Cloud Router and Cloud NAT so that the VMs reach the internet (a backend outside Google Cloud)."
  type        = bool
  default     = false
}
