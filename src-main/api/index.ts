export * from './devices';
export * from './errors';
export * from './events';
export * from './format-issues';
export * from './methods';
export * from './wire';
export * from './bridge';
