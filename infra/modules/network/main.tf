# The benchmark network: VMs have no external address. Private Google Access reaches Google's
# APIs and Artifact Registry (the runner image, the Docker Hub remote repository the gateways
# pull through); Cloud NAT, billed per hour, exists only with `nat` (a plan benchmarking a
# service on the internet). Ingress is closed except the paths a benchmark needs, by network tag:
# tester → gateway, gateway → backend (every replica's port; a change under load moves the
# gateways to the second backend's), tester → backend (the no-gateway baseline, plain or over
# TLS, the replicas' resets, and the fault's control, which no gateway reaches), and tester →
# tester on the phase barrier's port only (with several testers, tester 0 serves it). A gateway
# VM's management port is on its loopback: no rule reaches it.

locals {
  tags = {
    tester  = "${var.prefix}-tester"
    gateway = "${var.prefix}-gateway"
    backend = "${var.prefix}-backend"
  }
}

resource "google_compute_network" "this" {
  project                 = var.project_id
  name                    = "${var.prefix}-bench"
  auto_create_subnetworks = false
}

resource "google_compute_subnetwork" "this" {
  project                  = var.project_id
  name                     = "${var.prefix}-bench-${var.region}"
  region                   = var.region
  network                  = google_compute_network.this.id
  ip_cidr_range            = var.cidr
  private_ip_google_access = true
}

resource "google_compute_router" "this" {
  count   = var.nat ? 1 : 0
  project = var.project_id
  name    = "${var.prefix}-bench"
  region  = var.region
  network = google_compute_network.this.id
}

resource "google_compute_router_nat" "this" {
  count                              = var.nat ? 1 : 0
  project                            = var.project_id
  name                               = "${var.prefix}-bench"
  router                             = google_compute_router.this[0].name
  region                             = var.region
  nat_ip_allocate_option             = "AUTO_ONLY"
  source_subnetwork_ip_ranges_to_nat = "ALL_SUBNETWORKS_ALL_IP_RANGES"
}

resource "google_compute_firewall" "tester_to_gateway" {
  project     = var.project_id
  name        = "${var.prefix}-tester-to-gateway"
  network     = google_compute_network.this.id
  direction   = "INGRESS"
  source_tags = [local.tags.tester]
  target_tags = [local.tags.gateway]
  allow {
    protocol = "tcp"
    ports    = [tostring(var.ports.gateway)]
  }
}

resource "google_compute_firewall" "to_backend" {
  project     = var.project_id
  name        = "${var.prefix}-to-backend"
  network     = google_compute_network.this.id
  direction   = "INGRESS"
  source_tags = [local.tags.gateway, local.tags.tester]
  target_tags = [local.tags.backend]
  allow {
    protocol = "tcp"
    ports    = ["${var.ports.backend}-${var.ports.backend_last}"]
  }
}

resource "google_compute_firewall" "tester_to_backend" {
  project     = var.project_id
  name        = "${var.prefix}-tester-to-backend"
  network     = google_compute_network.this.id
  direction   = "INGRESS"
  source_tags = [local.tags.tester]
  target_tags = [local.tags.backend]
  allow {
    protocol = "tcp"
    ports    = [tostring(var.ports.backend_tls), tostring(var.ports.backend_control)]
  }
}

resource "google_compute_firewall" "tester_to_tester" {
  project     = var.project_id
  name        = "${var.prefix}-tester-to-tester"
  network     = google_compute_network.this.id
  direction   = "INGRESS"
  source_tags = [local.tags.tester]
  target_tags = [local.tags.tester]
  allow {
    protocol = "tcp"
    ports    = [tostring(var.ports.barrier)]
  }
}
