print("portctl: not yet")
