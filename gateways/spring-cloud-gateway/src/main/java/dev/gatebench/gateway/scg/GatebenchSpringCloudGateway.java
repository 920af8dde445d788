package dev.gatebench.gateway.scg;

import java.util.Map;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/**
 * Spring Cloud Gateway as gatebench runs it: the stock WebFlux gateway, plus one generic route
 * predicate ({@link RawPathRoutePredicateFactory}).
 *
 * <p>Routes, port and every proxy setting come from the application.yml that gatebench's
 * spring-cloud-gateway renderer writes for one API description; it is passed at start with
 * {@code --spring.config.location=file:/path/application.yml}.
 *
 * <p>The actuator is on the classpath for one endpoint, {@code /actuator/refresh} (a live
 * configuration change: the file is read again, routes are rebuilt). Its HTTP endpoints are off
 * ({@code management.server.port=-1}, a default) unless the rendered file opens the management
 * port on loopback; the API's port never serves them.
 */
@SpringBootApplication
public class GatebenchSpringCloudGateway {

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(GatebenchSpringCloudGateway.class);
        app.setDefaultProperties(Map.of("management.server.port", "-1"));
        app.run(args);
    }

    @Bean
    public RawPathRoutePredicateFactory rawPathRoutePredicateFactory() {
        return new RawPathRoutePredicateFactory();
    }
}
