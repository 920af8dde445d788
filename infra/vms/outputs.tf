output "instances" {
  description = "Name and internal address of every VM of the run."
  value = merge(
    { for vm in google_compute_instance.backend : vm.name => vm.network_interface[0].network_ip },
    { for vm in google_compute_instance.gateway : vm.name => vm.network_interface[0].network_ip },
    { for vm in google_compute_instance.tester : vm.name => vm.network_interface[0].network_ip },
  )
}
