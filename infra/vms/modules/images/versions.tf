terraform {
  required_version = ">= 1.7.0"
}
