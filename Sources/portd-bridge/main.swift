// portd-bridge: names across hosts through NATS. Everything it does is in
// the PortBridge library (BridgeMain), where tests reach it.
import PortBridge

BridgeMain.run()
