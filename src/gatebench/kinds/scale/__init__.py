"""kinds/scale"""
