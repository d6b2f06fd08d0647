export { SCOPES, localSecret, mintToken, type Scope } from './token';
