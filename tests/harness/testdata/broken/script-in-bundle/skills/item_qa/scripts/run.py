print("scripts never run")
