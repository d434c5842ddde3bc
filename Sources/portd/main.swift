print("portd: not yet")
