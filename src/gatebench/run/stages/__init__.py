"""run/stages"""
