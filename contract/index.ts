export * from './common.ts';
export * from './resources.ts';
export * from './events.ts';
export * from './orders.ts';
export * from './reporting.ts';
export * from './issues.ts';
export * from './ratios.ts';
