"""The kinds of run: one package each (fixed, capacity, scale, change), in one registry
(``gatebench.kinds.registry``). ``_live`` holds what route scale and change under load share."""
