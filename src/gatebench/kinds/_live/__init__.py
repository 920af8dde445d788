"""What route scale and change under load share: the live gateway, its measurements, the
stages around their loads, their metrics and report, and what they refuse of a plan."""
