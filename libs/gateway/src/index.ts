export { startGateway, type GatewayHandle, type GatewayOptions } from './gateway';
export { gatewayLimits } from './options';
export { History } from './history/history';
