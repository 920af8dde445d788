"""kinds/fixed"""
